"""What the MCP tools run on, built by the composition root (or by a test) and handed to the server builder.

A module of its own so that :mod:`mcp_server.server` (which registers the tool families) and
:mod:`mcp_server.tools` (which use these services) both import it and not each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from orc.contracts import DocumentChatResult, FileRef
from orc.documents.catalog.contexts import ContextDirectory
from orc.documents.catalog.library import DocumentLibrary
from orc.documents.catalog.scopes import DocumentScopes
from orc.documents.chat.document_chat import DocumentChatMode
from orc.documents.sessions import SessionFiles
from orc.principal import Principal


class DocumentAnswerer(Protocol):
    """What ``document_chat`` calls: :class:`orc.documents.chat.document_chat.DocumentChatService`, or (in a served
    process) that service behind the turn policy (``orc.turns.document_chat``)."""

    async def answer(
        self,
        principal: Principal,
        conversation_id: str,
        question: str,
        document_names: Sequence[str],
        cached_file_info: Sequence[FileRef] | None = None,
        mode: DocumentChatMode = "answer",
    ) -> DocumentChatResult:
        """A grounded answer (``answer``) or the ranked evidence (``evidence``) from the named documents."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentChatServices:
    """What ``document_chat`` runs on, and the limits it enforces before any work is done."""

    document_chat: DocumentAnswerer
    max_question_chars: int
    """The longest question, in characters (``ORC_MAX_QUESTION_CHARS``)."""
    max_document_names: int
    """Documents one call may name (``ORC_MAX_BLOB_NAMES``, as a turn's attached files)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServices(DocumentChatServices):
    """What every tool of the server runs on: ``document_chat``'s services plus the document services."""

    library: DocumentLibrary
    """The document library behind ``documents.*``."""
    scopes: DocumentScopes
    """What a scope makes available: checks every tool's scope arguments, lists a session's documents."""
    session_files: SessionFiles
    """The documents attached to sessions, behind ``session.*``."""
    directory: ContextDirectory
    """The context tree behind ``contexts.list``."""
