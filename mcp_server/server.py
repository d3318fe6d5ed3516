"""Build the orc MCP server: the document tools over the ``orc.documents`` services.

The server is transport-agnostic; :mod:`mcp_server.stdio` and :mod:`mcp_server.http` serve it, and the
orchestrator connects to it in memory (``mcp.shared.memory``).
"""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP

from mcp_server.services import DocumentChatServices, McpServices
from mcp_server.tools import document_chat, documents, session

INSTRUCTIONS = """orc document tools. Every call is scoped to the authenticated user, to the conversation given as
session_id and to the focus context (context_type, context_id). Start with documents.list; use documents.analyze
for documents that are not ready; search with documents.search; cite evidence with the refs the tools return
([document::S<n>])."""


def build_mcp_server(services: McpServices, *, name: str = "orc") -> FastMCP:
    """A FastMCP server with every tool family registered; nothing is started."""
    server = _empty_server(name)
    document_chat.register(server, services)
    documents.register(server, services.library)
    session.register(server, services.library)
    return server


def build_document_chat_server(services: DocumentChatServices, *, name: str = "orc") -> FastMCP:
    """A FastMCP server with ``document_chat`` only (no document library): nothing is started."""
    server = _empty_server(name)
    document_chat.register(server, services)
    return server


def _empty_server(name: str) -> FastMCP:
    # log_level WARNING: FastMCP calls logging.basicConfig(); WARNING is the root logger's default anyway,
    # so an application that has not configured logging does not get its level changed by building a server.
    return FastMCP(name=name, instructions=INSTRUCTIONS, log_level="WARNING")
