"""Build the orc MCP server: the document tools over the ``orc.documents`` services.

The server is transport-agnostic; :mod:`mcp_server.stdio` and :mod:`mcp_server.http` serve it, and the
orchestrator connects to it in memory (``mcp.shared.memory``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.fastmcp import FastMCP

from mcp_server.tools import document_chat
from orc.documents.document_chat import DocumentChatService

INSTRUCTIONS = """orc document tools. Every call is scoped to the authenticated user and to the conversation
given as session_id; cite evidence with the refs the tools return ([document::S<n>])."""


@dataclass(frozen=True, slots=True)
class McpServices:
    """What the tools run on, built by the composition root."""

    document_chat: DocumentChatService
    max_question_chars: int = 4000
    max_document_names: int = 20


def build_mcp_server(services: McpServices, *, name: str = "orc") -> FastMCP:
    """A FastMCP server with every tool family registered; nothing is started."""
    # log_level WARNING: FastMCP calls logging.basicConfig(); WARNING is the root logger's default anyway,
    # so an application that has not configured logging does not get its level changed by building a server.
    server = FastMCP(name=name, instructions=INSTRUCTIONS, log_level="WARNING")
    document_chat.register(server, services)
    return server
