"""``python -m mcp_server [--organization ORG] [--user USER]``: the orc MCP server over stdio.

Settings come from the ``ORC_`` environment (``ORC_HOME``, ``ORC_STORAGE``, ``ORC_MODEL``...). Over stdio the
scope is whoever started the process, given by the options (default: the embedded single local principal).
Nothing may be written to stdout except protocol messages: logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack

from pydantic import ValidationError

from orc import event_loop
from orc.errors import ConfigurationError, InvalidName
from orc.principal import LOCAL_PRINCIPAL, Principal


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command-line options."""
    parser = argparse.ArgumentParser(prog="python -m mcp_server", description="orc MCP server over stdio")
    parser.add_argument("--organization", default=LOCAL_PRINCIPAL.organization, help="organization id")
    parser.add_argument("--user", default=LOCAL_PRINCIPAL.user, help="user id")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser.parse_args(argv)


async def serve(principal: Principal) -> None:
    """Build the document services from the environment's settings and serve them over stdio."""
    # Imported here: the composition root pulls in every backend, and --help should not pay for that.
    from mcp_server.stdio import run_stdio
    from orc.composition import build_document_services
    from orc.settings import Settings

    async with AsyncExitStack() as stack:
        services = await build_document_services(Settings(), stack)
        await run_stdio(services.server, principal)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        principal = Principal(organization=args.organization, user=args.user)
    except (ValidationError, InvalidName):
        # Principal's validators raise InvalidName for a malformed id and ValueError for a reserved one.
        print(
            "error: --organization and --user must be plain ids (letters, digits, '_', '-', '.', '@')",
            file=sys.stderr,
        )
        return 2
    try:
        event_loop.run(serve(principal))
    except ConfigurationError as exc:
        # The operator's mistake (e.g. ORC_STORAGE=azure without its endpoint): say which setting, no trace.
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
