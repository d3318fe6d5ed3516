"""orc's MCP server: document tools over the ``orc.documents`` services (in memory, stdio or HTTP)."""

from mcp_server.scope import current_principal, resolve_principal
from mcp_server.server import McpServices, build_mcp_server

__all__ = ["McpServices", "build_mcp_server", "current_principal", "resolve_principal"]
