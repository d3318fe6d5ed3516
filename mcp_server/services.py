"""What the MCP tools run on, built by the composition root (or by a test) and handed to the server builder.

A module of its own so that :mod:`mcp_server.server` (which registers the tool families) and
:mod:`mcp_server.tools` (which use these services) both import it and not each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from orc.documents.document_chat import DocumentChatService
from orc.documents.library import DocumentLibrary


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentChatServices:
    """What ``document_chat`` runs on, and the limits it enforces before any work is done."""

    document_chat: DocumentChatService
    max_question_chars: int = 4000
    max_document_names: int = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServices(DocumentChatServices):
    """What every tool of the server runs on: ``document_chat``'s services plus the document library."""

    library: DocumentLibrary
    """The document library behind ``documents.*`` and ``session.*``."""
