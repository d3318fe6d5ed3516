"""Serve the MCP server over stdio (``python -m mcp_server``), acting for one principal set at startup."""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP

from mcp_server.scope import current_principal
from orc.principal import Principal


async def run_stdio(server: FastMCP, principal: Principal) -> None:
    """Serve ``server`` on stdin/stdout until the client disconnects; every call acts for ``principal``."""
    token = current_principal.set(principal)
    try:
        await server.run_stdio_async()
    finally:
        current_principal.reset(token)
