"""Serve the MCP server over stdio (``python -m mcp_server``), acting for one principal set at startup."""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP

from mcp_server.output import clean_tool_results
from mcp_server.scope import current_principal
from mcp_server.tools.local_files import stdio_transport
from orc.output_policy import OutputPolicy
from orc.principal import Principal


async def run_stdio(server: FastMCP, principal: Principal, output_policy: OutputPolicy | None = None) -> None:
    """Serve ``server`` on stdin/stdout until the client disconnects; every call acts for ``principal`` and its
    result passes ``output_policy`` (default: no images, no script links)."""
    clean_tool_results(server._mcp_server, output_policy or OutputPolicy())
    token = current_principal.set(principal)
    stdio = stdio_transport.set(True)
    try:
        await server.run_stdio_async()
    finally:
        stdio_transport.reset(stdio)
        current_principal.reset(token)
