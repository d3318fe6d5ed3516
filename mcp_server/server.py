"""Build the orc MCP server: the document tools over the ``orc.documents`` services.

The server is transport-agnostic; :mod:`mcp_server.stdio` and :mod:`mcp_server.http` serve it, and the
orchestrator connects to it in memory (``mcp.shared.memory``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.fastmcp import FastMCP

from mcp_server.tools import document_chat, documents, session
from orc.documents.document_chat import DocumentChatService
from orc.documents.library import DocumentLibrary

INSTRUCTIONS = """orc document tools. Every call is scoped to the authenticated user, to the conversation given as
session_id and to the focus context (context_type, context_id). Start with documents.list; use documents.analyze
for documents that are not ready; search with documents.search; cite evidence with the refs the tools return
([document::S<n>])."""


@dataclass(frozen=True, slots=True)
class McpServices:
    """What the tools run on, built by the composition root."""

    document_chat: DocumentChatService
    max_question_chars: int = 4000
    max_document_names: int = 20
    library: DocumentLibrary | None = None
    """The document library behind ``documents.*`` and ``session.*``; without it only document_chat is served."""


def build_mcp_server(services: McpServices, *, name: str = "orc") -> FastMCP:
    """A FastMCP server with every tool family registered; nothing is started."""
    # log_level WARNING: FastMCP calls logging.basicConfig(); WARNING is the root logger's default anyway,
    # so an application that has not configured logging does not get its level changed by building a server.
    server = FastMCP(name=name, instructions=INSTRUCTIONS, log_level="WARNING")
    document_chat.register(server, services)
    if services.library is not None:
        documents.register(server, services)
        session.register(server, services)
    return server
