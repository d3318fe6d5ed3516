"""``orc mcp`` or ``python -m mcp_server`` ``[--organization ORG] [--user USER] [--tool-names F] [--allow-dir DIR]``.

The orc MCP server over stdio. Settings come from the ``ORC_`` environment (``ORC_HOME``, ``ORC_STORAGE``,
``ORC_MODEL``, ``ORC_MCP_TOOL_NAMES``, ``ORC_MCP_ALLOWED_DIRS``...). Over stdio the scope is whoever started the
process, given by the options (default: the embedded single local principal). Tool names are ``documents_list``
etc. by default, the form every major desktop client accepts; ``--tool-names dotted`` (or
``ORC_MCP_TOOL_NAMES=dotted``) publishes the design's ``documents.list``. Each ``--allow-dir`` adds a folder whose
files ``session.attach_path`` may attach. Nothing may be written to stdout except protocol messages: logs go to
stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from orc import event_loop
from orc.cli.refusals import error_line
from orc.errors import ConfigurationError, InvalidName
from orc.principal import LOCAL_PRINCIPAL, Principal
from orc.tool_contract import STDIO_TOOL_NAMES, TOOL_NAME_FORMS, ToolNameForm


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command-line options."""
    parser = argparse.ArgumentParser(prog="python -m mcp_server", description="orc MCP server over stdio")
    parser.add_argument("--organization", default=LOCAL_PRINCIPAL.organization, help="organization id")
    parser.add_argument("--user", default=LOCAL_PRINCIPAL.user, help="user id")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    add_client_options(parser)
    return parser.parse_args(argv)


def add_client_options(parser: argparse.ArgumentParser, *, inherit: bool = False) -> None:
    """``--tool-names`` and ``--allow-dir``: ``python -m mcp_server``'s and every ``orc mcp`` command's (``inherit``:
    left unset, for a subcommand whose parent's values must not be overwritten by its defaults)."""
    unset: dict[str, Any] = {"default": argparse.SUPPRESS} if inherit else {}
    parser.add_argument(
        "--tool-names",
        choices=TOOL_NAME_FORMS,
        **(unset or {"default": None}),
        help="underscore (documents_list: accepted by Claude Desktop, OpenAI, Codex, Copilot) or dotted "
        "(documents.list); default: ORC_MCP_TOOL_NAMES, else underscore",
    )
    parser.add_argument(
        "--allow-dir",
        dest="allow_dirs",
        action="append",
        type=Path,
        metavar="DIR",
        **(unset or {"default": []}),
        help="a folder whose files session.attach_path may attach (repeatable; adds to ORC_MCP_ALLOWED_DIRS)",
    )


async def serve(principal: Principal, tool_names: ToolNameForm | None = None, allow_dirs: Sequence[str] = ()) -> None:
    """Build the document services from the environment's settings and serve them over stdio."""
    # Imported here: the composition root pulls in every backend, and --help should not pay for that.
    from mcp_server.server import build_mcp_server
    from mcp_server.stdio import run_stdio
    from mcp_server.tools import local_files
    from orc.cli.refusals import settings_from_environment
    from orc.composition import build_document_services, build_foundation

    settings = settings_from_environment()
    folders = local_files.folders_from([*settings.mcp_allowed_dirs, *allow_dirs])
    form = tool_names or settings.mcp_tool_names or STDIO_TOOL_NAMES
    async with AsyncExitStack() as stack:
        foundation = await build_foundation(settings, stack)
        services = await build_document_services(settings, stack, foundation)
        server = services.server if form == "dotted" else build_mcp_server(services.mcp, tool_names=form)
        local_files.register(server, services.mcp.session_files, services.mcp.scopes, folders)
        await run_stdio(server, principal, foundation.output_policy)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status."""
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    try:
        principal = Principal(organization=args.organization, user=args.user)
    except (ValidationError, InvalidName):
        # Principal's validators raise InvalidName for a malformed id and ValueError for a reserved one.
        print(
            error_line(
                "invalid_name", "--organization and --user must be plain ids (letters, digits, '_', '-', '.', '@')"
            ),
            file=sys.stderr,
        )
        return 2
    try:
        event_loop.run(serve(principal, args.tool_names, args.allow_dirs))
    except ConfigurationError as exc:
        # The operator's mistake (e.g. ORC_STORAGE=azure without its endpoint): say which setting, no trace.
        print(error_line(exc.code, exc.message), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
