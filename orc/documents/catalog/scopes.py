"""Scopes: who asks about which documents, checked against the caller's organization and its stored history.

The document tools and the routes take scope arguments (a session, a focus context, whether to include the
historical contexts); :class:`DocumentScopes` validates them into a :class:`DocumentScope` and answers which
documents the scope makes available (:func:`orc.documents.catalog.availability.available_documents`).
"""

from __future__ import annotations

from orc.conversations import HISTORY_TURNS, ConversationRepository, FocusContext
from orc.documents.catalog.availability import Availability, DocumentScope, available_documents
from orc.documents.catalog.context_documents import ContextDocuments
from orc.documents.catalog.contexts import ContextDirectory, historical_from_turns
from orc.documents.records import ContextRef
from orc.documents.sessions import SessionFiles
from orc.errors import InvalidInput
from orc.names import validate_identifier
from orc.principal import Principal


class DocumentScopes:
    """Resolves scope arguments and lists what a scope makes available."""

    def __init__(
        self,
        *,
        directory: ContextDirectory,
        context_documents: ContextDocuments,
        session_files: SessionFiles,
        conversations: ConversationRepository,
    ) -> None:
        self._directory = directory
        self._context_documents = context_documents
        self._session_files = session_files
        # Historical contexts are read from the conversation store (shared with the turn service).
        self._conversations = conversations

    async def check_focus(self, principal: Principal, focus: FocusContext | None) -> ContextRef | None:
        """The focus as a :class:`ContextRef` once it is known to exist in the caller's organization."""
        if focus is None:
            return None
        ref = ContextRef.parse(focus.type, focus.id)
        await self._directory.get(principal, ref)
        return ref

    async def resolve(
        self,
        principal: Principal,
        *,
        session_id: str | None = None,
        context_type: str | None = None,
        context_id: str | None = None,
        include_historical: bool = False,
    ) -> DocumentScope:
        """Validate scope arguments against ``principal`` and derive the historical contexts from stored history.

        Raises :class:`~orc.errors.InvalidInput` for incomplete or malformed arguments and
        :class:`~orc.errors.NotFound` (``context_not_found``) for a context the caller's organization does not have.
        """
        if session_id is not None:
            validate_identifier(session_id, what="session")
        if (context_type is None) != (context_id is None):
            raise InvalidInput("give both context_type and context_id for a focus context, or neither")
        focus = None
        if context_type is not None and context_id is not None:
            focus = ContextRef.parse(context_type, context_id)
            await self._directory.get(principal, focus)
        if include_historical and session_id is None:
            raise InvalidInput("include_historical needs the session_id whose history names the contexts")
        historical: tuple[ContextRef, ...] = ()
        if include_historical and session_id is not None:
            turns = await self._conversations.recent_turns(principal, session_id, HISTORY_TURNS)
            historical = tuple(historical_from_turns(turns, focus))
        return DocumentScope(
            session_id=session_id, focus=focus, historical=historical, include_historical=include_historical
        )

    async def available(self, principal: Principal, scope: DocumentScope) -> Availability:
        """The documents ``scope`` makes available (see :mod:`orc.documents.catalog.availability`)."""
        return await available_documents(
            principal,
            scope,
            directory=self._directory,
            context_documents=self._context_documents,
            session_files=self._session_files,
        )
