"""``python -m mcp_server``: the orc MCP server over stdio, the same as ``orc mcp`` (:mod:`orc.cli.mcp`, where the
entry points live)."""

import sys

from orc.cli.mcp import main

if __name__ == "__main__":
    sys.exit(main())
