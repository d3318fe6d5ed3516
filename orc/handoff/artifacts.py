"""What a user can supply to a paused turn: a session's artifacts (context-handoff-plan §4.2 and phase 3).

``GET /api/sessions/{id}/artifacts`` lists, in this order, the documents available to the session (its own
files, then those of its focus and historical contexts, as ``documents.list`` sees them), the facts of the
session's aggregate digest with the SourceRefs they cite, and the earlier answers, newest first. Each item
carries ``supply``: the payload to send to ``…/context-requests/{request_id}/supply`` (with a ``slot``) to
attach it, so a client offers one-click attachment without knowing how each kind is referenced.

Everything comes from what the caller can already read through the API (the same scope rules as the tools), and
texts are shortened: a listing is a menu, not a copy of the documents.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Literal

from pydantic import BaseModel, Field

from orc.conversations import ConversationRepository, FocusContext
from orc.conversations.context_requests import SuggestedSupply
from orc.conversations.models import AssistantMessage
from orc.digests.context import ContextFiles
from orc.documents.catalog.scopes import DocumentScopes
from orc.errors import DigestFailed, InvalidInput, NotFound, NotReady
from orc.handoff.redaction import Redactor
from orc.names import validate_identifier
from orc.principal import Principal

ArtifactKind = Literal["document", "fact", "answer"]
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
TITLE_CHARS = 200
DETAIL_CHARS = 300
MAX_SUPPLIED_ANSWER_CHARS = 8_000
"""An earlier answer is supplied as text; one longer than this is cut (answers rarely come close)."""


class Artifact(BaseModel):
    """One thing the user can attach to a context request."""

    kind: ArtifactKind
    id: str = Field(description="Stable within the session: document:<id>, fact:<n>, answer:<message_id>.")
    title: str = Field(description="The document's name, the fact's claim, or the question an answer answered.")
    detail: str | None = Field(default=None, description="Where it comes from, or the start of the answer.")
    status: str | None = Field(default=None, description="A document's processing status.")
    context: str | None = Field(default=None, description="session, or the context a document belongs to.")
    source_refs: list[str] = Field(default_factory=list, description="The SourceRefs a fact cites.")
    created_at: str | None = None
    supply: SuggestedSupply


class ArtifactPage(BaseModel):
    """A page of a session's artifacts; pass ``next_cursor`` back as ``cursor`` for the next one."""

    session_id: str
    items: list[Artifact]
    total: int
    next_cursor: str | None = None
    redactions: int = Field(default=0, description="Secrets redacted from this page's items before they were listed.")


class SessionArtifacts:
    """Lists a session's artifacts for the caller (documents, digest facts, earlier answers), paged."""

    def __init__(
        self,
        *,
        scopes: DocumentScopes,
        context_files: ContextFiles,
        conversations: ConversationRepository,
        redactor: Redactor | None = None,
    ) -> None:
        self._scopes = scopes
        self._redactor = redactor or Redactor()
        self._context_files = context_files
        self._conversations = conversations

    async def page(
        self,
        principal: Principal,
        session_id: str,
        *,
        kind: ArtifactKind | None = None,
        cursor: str | None = None,
        limit: int = DEFAULT_LIMIT,
        query: str | None = None,
    ) -> ArtifactPage:
        """One page of the session's artifacts (of one ``kind`` when given, and whose title or detail holds every
        word of ``query`` when given); :class:`NotFound` for a session the caller does not have."""
        validate_identifier(session_id, what="conversation")
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}", code="invalid_limit")
        start = _offset(cursor)
        summary = await self._conversations.get(principal, session_id)
        turns = await self._conversations.turns(principal, session_id) if summary is not None else []
        has_files = await self._has_files(principal, session_id)
        if summary is None and not has_files:
            raise NotFound("no such session", code="session_not_found")
        focus = next((turn.assistant.focus_context for turn in reversed(turns) if turn.assistant.focus_context), None)
        items: list[Artifact] = []
        if kind in (None, "document"):
            items += await self._documents(principal, session_id, focus)
        if kind in (None, "fact") and has_files:
            items += await self._facts(principal, session_id)
        if kind in (None, "answer"):
            items += [_answer(turn.user.content, turn.assistant) for turn in reversed(turns) if turn.assistant.content]
        # Redacted before matching: a search must not find an item by the secret it hides.
        counted = await self._redacted(items)
        if query and query.strip():
            words = query.casefold().split()
            counted = [
                (item, count)
                for item, count in counted
                if all(word in f"{item.title} {item.detail or ''}".casefold() for word in words)
            ]
        items = [item for item, _ in counted]
        chosen = items[start : start + limit]
        redactions = sum(count for _, count in counted[start : start + limit])
        more = start + limit < len(items)
        return ArtifactPage(
            session_id=session_id,
            items=chosen,
            total=len(items),
            next_cursor=_cursor(start + limit) if more else None,
            redactions=redactions,
        )

    async def _redacted(self, items: list[Artifact]) -> list[tuple[Artifact, int]]:
        """Each item with secrets redacted from every text shown or supplied (what a click would attach included),
        and how many were; matched off the event loop, in one time limit for the page."""
        texts: list[str | None] = [text for item in items for text in (item.title, item.detail, item.supply.text)]
        done = await self._redactor.redact_all(texts)
        counted = []
        for index, item in enumerate(items):
            (title, in_title), (detail, in_detail), (text, in_text) = done[3 * index : 3 * index + 3]
            supply = item.supply.model_copy(update={"text": text})
            cleaned = item.model_copy(update={"title": title or "", "detail": detail, "supply": supply})
            counted.append((cleaned, in_title + in_detail + in_text))
        return counted

    async def _has_files(self, principal: Principal, session_id: str) -> bool:
        try:
            await self._context_files.manifest(principal, session_id, repair=False)
        except NotFound:
            return False
        return True

    async def _documents(self, principal: Principal, session_id: str, focus: FocusContext | None) -> list[Artifact]:
        scope = await self._scopes.resolve(
            principal,
            session_id=session_id,
            context_type=focus.type if focus else None,
            context_id=focus.id if focus else None,
            include_historical=True,
        )
        available = await self._scopes.available(principal, scope)
        artifacts = []
        for document in available.documents:
            info = document.info
            where = "session" if info.context_type == "session" else f"{info.context_type} {info.context_id}"
            if info.origin == "historical":
                where += " (historical)"
            artifacts.append(
                Artifact(
                    kind="document",
                    id=f"document:{info.document_id}",
                    title=document.ref_name,
                    detail=info.status_reason,
                    status=info.status,
                    context=where,
                    created_at=info.created_at,
                    supply=SuggestedSupply(document_id=info.document_id),
                )
            )
        return artifacts

    async def _facts(self, principal: Principal, session_id: str) -> list[Artifact]:
        try:
            _, digest = await self._context_files.aggregate(principal, session_id)
        except (NotReady, DigestFailed, NotFound):
            return []  # no aggregate digest yet (or it failed): its facts are not offered
        artifacts = []
        for number, fact in enumerate(digest.get("facts") or [], start=1):
            if not isinstance(fact, dict):
                continue
            claim = str(fact.get("claim") or "").strip()
            refs = [ref for ref in fact.get("sources") or [] if isinstance(ref, str)]
            if not claim or not refs:
                continue
            artifacts.append(
                Artifact(
                    kind="fact",
                    id=f"fact:{number}",
                    title=_shorten(claim, TITLE_CHARS),
                    detail=_from_files(refs),
                    context="session",
                    source_refs=refs,
                    supply=SuggestedSupply(source_ref=refs[0]),
                )
            )
        return artifacts


# A summary point's SourceRef: ``<filename>::<span_id>``, sometimes with a readable hint after it (``::p. 2``).
_FACT_SOURCE = re.compile(r"^(?P<filename>.+?)::S\d+(?:::.*)?$")


def _from_files(refs: list[str]) -> str:
    """Where a summary's point comes from, in a reader's words: ``from lease.pdf and notes.md``."""
    names = list(dict.fromkeys(m.group("filename") for ref in refs if (m := _FACT_SOURCE.match(ref))))
    if not names:
        return "from the summary of this chat's files"
    return "from " + (names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}")


def _answer(question: str, assistant: AssistantMessage) -> Artifact:
    return Artifact(
        kind="answer",
        id=f"answer:{assistant.message_id}",
        title=_shorten(question, TITLE_CHARS),
        detail=_shorten(assistant.content, DETAIL_CHARS),
        created_at=assistant.created_at,
        supply=SuggestedSupply(text=assistant.content[:MAX_SUPPLIED_ANSWER_CHARS]),
    )


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        offset = json.loads(base64.urlsafe_b64decode(padded.encode()))["o"]
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        raise InvalidInput("the cursor is not one this listing returned", code="invalid_cursor") from None
    if not isinstance(offset, int) or offset < 0:
        raise InvalidInput("the cursor is not one this listing returned", code="invalid_cursor")
    return offset
