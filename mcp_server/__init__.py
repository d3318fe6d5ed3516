"""orc's MCP server: document tools over the ``orc.documents`` services (in memory, stdio or HTTP)."""

from mcp_server.scope import current_principal, resolve_principal
from mcp_server.server import build_document_chat_server, build_mcp_server
from mcp_server.services import DocumentChatServices, McpServices

__all__ = [
    "DocumentChatServices",
    "McpServices",
    "build_document_chat_server",
    "build_mcp_server",
    "current_principal",
    "resolve_principal",
]
