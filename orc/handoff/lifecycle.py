"""The life cycle of a context request around a paused turn (context handoff): pause, supply, run without it,
cancel, supersede and expire.

The turn service (:mod:`orc.turns`) runs the graph; this module decides what a request may do next and turns what
the user supplied into sources the answer can cite: a text becomes a ``supplied::<slot>-<n>`` source, a document the
best spans of it for the question, a SourceRef that span. Every transition is an ETag-conditional write of the
request, so one request resumes its turn once, whichever instance the supply reaches.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import JsonDict

from orc.clock import utc_now
from orc.contracts import SourceSpan, UnavailableDocument
from orc.conversations import ConversationRepository, FocusContext
from orc.conversations.context_requests import (
    DEFAULT_SIZE_LIMIT,
    ContextRequestRecord,
    ContextRequests,
    RequestEvent,
    RequiredSlot,
    Supply,
    deadline,
)
from orc.documents.catalog.availability import DocumentScope
from orc.documents.catalog.library import DocumentLibrary
from orc.documents.records import ContextRef
from orc.errors import Conflict, InvalidInput, NotFound, OrcError, PayloadTooLarge
from orc.handoff.redaction import Redactor
from orc.names import validate_identifier
from orc.principal import Principal
from orc.telemetry import metrics

log = logging.getLogger(__name__)

MAX_PAYLOADS = 20
MAX_TEXT_CHARS = DEFAULT_SIZE_LIMIT
SUPPLIED_DOCUMENT = "supplied"
"""The document name of supplied texts' SourceRefs (``supplied::evidence-1``)."""
SPANS_PER_DOCUMENT = 3


_WHITE_SPACE = r"\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
"""The characters ``str.strip()`` removes, spelled out: ``\\s`` means other sets in other regex engines."""
NOT_BLANK = f"[^{_WHITE_SPACE}]"
"""A text holds a character that is not white space (one of white space alone is refused, ``empty_supply``)."""
DOCUMENT_ID = (
    r"^(?![\s\S]*\n)"  # one line: Python's $ also matches before a final line break, ECMAScript's does not
    r"(?!(?:[cC][oO][nN]|[pP][rR][nN]|[aA][uU][xX]|[nN][uU][lL]|[cC][oO][mM][1-9]|[lL][pP][tT][1-9])(?:\.|$))"
    r"[A-Za-z0-9](?:[A-Za-z0-9_.@-]{0,126}[A-Za-z0-9_@-])?$"
)
"""A document id as :func:`orc.names.validate_identifier` takes it: 1-128 letters, digits, ``_ . @ -``, starting with
a letter or digit, not ending with a dot, not a Windows device name."""
SOURCE_REF = r"^(?=[\s\S]+::)[\s\S]*(?:[^:]|[^:]:)$"
"""``<document>::<span_id>``, split at its last ``::``: both sides non-empty (``invalid_source_ref`` otherwise) —
a ``::`` after the first character, and no ``::`` at the end. Linear in the length: a pattern that looks for the
``::`` and then for the end backtracks quadratically (45 ms for 1,200 colons, 20 of them per supply)."""
_ONE_REFERENCE: JsonDict = {
    "oneOf": [
        {"required": [field], "properties": {field: {"type": "string"}}}
        for field in ("text", "document_id", "source_ref")
    ]
}


class SupplyPayload(BaseModel):
    """One supplied piece of context: a text, a document or a span the caller can see.

    This is the published contract of a JSON supply (``docs/contracts``): its schema is generated from these fields,
    and the server refuses exactly what the schema refuses (beyond what depends on the request: its slots, the
    slot's size limit, what the caller can see)."""

    model_config = ConfigDict(extra="forbid", regex_engine="python-re", json_schema_extra=_ONE_REFERENCE)

    slot: str = Field(min_length=1, max_length=300)
    text: str | None = Field(
        default=None,
        max_length=MAX_TEXT_CHARS,
        pattern=NOT_BLANK,
        description=f"At most {MAX_TEXT_CHARS} characters (a slot may take fewer), not white space alone.",
    )
    document_id: str | None = Field(default=None, max_length=128, pattern=DOCUMENT_ID)
    source_ref: str | None = Field(default=None, max_length=1200, pattern=SOURCE_REF)

    @model_validator(mode="after")
    def _one_reference(self) -> SupplyPayload:
        given = [value for value in (self.text, self.document_id, self.source_ref) if value is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of text, document_id or source_ref")
        return self


class SuppliedText(SupplyPayload):
    """A payload an adapter made from what it read — a file's text (a multipart supply, a path given to the CLI,
    with its ``name`` kept as provenance) or a pasted text — rather than one a client sent: its text is checked by
    the supply against the slot's limit (refused, never cut) instead of when it is made."""

    text: str | None = None
    name: str | None = Field(default=None, max_length=300, description="The file's name, when the text is a file's.")


class SupplyBody(BaseModel):
    """What the user supplies: texts, or documents and spans they can see, each for one of the request's slots."""

    model_config = ConfigDict(extra="forbid")

    payloads: list[SupplyPayload] = Field(min_length=1, max_length=MAX_PAYLOADS)


class ContextUpdate(BaseModel):
    """A request's state after a partial supply (the turn still waits for ``missing``)."""

    status: Literal["context_required"] = "context_required"
    conversation_id: str
    request_id: str
    supplied: list[str]
    missing: list[str]
    required: list[RequiredSlot]
    expires_at: str


Outcome = Literal["supplied", "run_without", "expired"]
"""How a request that resumes its turn ended."""
Ending = Outcome | Literal["cancelled", "superseded"]
"""How any request ended."""
_STATUS: dict[Ending, Literal["resolved", "expired", "cancelled", "superseded"]] = {
    "supplied": "resolved",
    "run_without": "resolved",
    "expired": "expired",
    "cancelled": "cancelled",
    "superseded": "superseded",
}


@dataclass(frozen=True, slots=True)
class Resumption:
    """A request that ended and resumes its turn now: how, with which supplied sources, and the sentence the answer
    carries when it goes on without them."""

    record: ContextRequestRecord
    outcome: Outcome
    supplied: list[SourceSpan]
    note: str = ""


class Handoff:
    """Context requests of paused turns: created when a turn pauses, moved on by supply, run-without, cancel, a
    new message (supersede) or the deadline."""

    def __init__(
        self,
        requests: ContextRequests,
        conversations: ConversationRepository,
        documents: DocumentLibrary,
        *,
        default_mode: Literal["allow", "never"],
        timeout_seconds: float,
        redactor: Redactor | None = None,
        reminder: float,
    ) -> None:
        self._requests = requests
        self._redactor = redactor or Redactor()
        self.reminder = reminder
        """The share of the timeout after which the user is reminded (0: never)."""
        self._conversations = conversations
        self._documents = documents
        self.default_mode = default_mode
        self.timeout_seconds = timeout_seconds

    # -- pausing ------------------------------------------------------------------------------------------------

    async def pause(
        self,
        principal: Principal,
        conversation_id: str,
        question: str,
        blob_names: list[str],
        focus: FocusContext | None,
        model_alias: str | None,
        unavailable: list[UnavailableDocument],
        required: Sequence[dict[str, Any]],
    ) -> ContextRequestRecord:
        """Store the request of a turn that just paused; the user message waits (``waiting_context``)."""
        summary = await self._conversations.get(principal, conversation_id)
        after_seq = summary.message_count // 2 if summary else 0
        # The newer message wins: a request still pending from an earlier pause can no longer be supplied.
        await self.supersede_pending(principal, conversation_id)
        now = datetime.now(UTC)
        slots, redactions = await self._redacted([RequiredSlot.model_validate(slot) for slot in required])
        request_id = ContextRequests.new_id()
        record = ContextRequestRecord(
            request_id=request_id,
            conversation_id=conversation_id,
            # Its own id: two pauses before a stored turn are two different waiting messages.
            user_message_id=f"msg-{after_seq + 1}-user-{request_id.removeprefix('req-')}",
            question=question,
            blob_names=blob_names,
            focus_context=focus,
            model=model_alias,
            principal=principal,
            after_seq=after_seq,
            unavailable=unavailable,
            required=slots,
            redactions=redactions,
            created_at=now.isoformat(),
            expires_at=deadline(now, self.timeout_seconds),
            remind_at=deadline(now, self.timeout_seconds * self.reminder) if self.reminder > 0 else None,
            events=[RequestEvent(type="requested", at=now.isoformat())],
        )
        await self._requests.create(record)
        metrics().context_requests.add(1, {"orc.handoff.event": "requested"})
        log.info("context request %s: %d slot(s)", record.request_id, len(record.required))
        return record

    async def _redacted(self, slots: list[RequiredSlot]) -> tuple[list[RequiredSlot], int]:
        """The slots with secrets redacted from their suggestions (labels and texts), before anything is stored or
        offered; and how many were. Matched off the event loop, in one time limit for the request."""
        offered = [suggestion for slot in slots for suggestion in slot.suggestions]
        texts: list[str | None] = [text for one in offered for text in (one.label, one.supply.text)]
        done = iter(await self._redactor.redact_all(texts))
        total = 0
        cleaned = []
        for slot in slots:
            suggestions = []
            for suggestion in slot.suggestions:
                (label, in_label), (text, in_text) = next(done), next(done)
                total += in_label + in_text
                supply = suggestion.supply.model_copy(update={"text": text})
                suggestions.append(suggestion.model_copy(update={"label": label or "", "supply": supply}))
            cleaned.append(slot.model_copy(update={"suggestions": suggestions}))
        return cleaned, total

    # -- moving a request on -----------------------------------------------------------------------------------

    async def supply(
        self, principal: Principal, conversation_id: str, request_id: str, payloads: Sequence[SupplyPayload]
    ) -> Resumption | ContextUpdate:
        """Add payloads; when every required slot has something, the request resolves and the turn resumes."""
        if not payloads:
            raise InvalidInput("supply at least one payload", code="no_payloads")
        if len(payloads) > MAX_PAYLOADS:
            raise PayloadTooLarge(f"at most {MAX_PAYLOADS} payloads per supply", code="too_many_payloads")
        record, etag = await self._pending(principal, conversation_id, request_id)
        slots = {slot.slot: slot for slot in record.required}
        for payload in payloads:
            if payload.slot not in slots:
                raise InvalidInput(
                    f"unknown slot {payload.slot[:80]!r}; the request needs: {', '.join(sorted(slots))}",
                    code="unknown_slot",
                )
            limit = min(slots[payload.slot].size_limit, MAX_TEXT_CHARS)
            if payload.text is not None and len(payload.text) > limit:
                # Refused, never cut: a cut passage could drop the very sentence the answer needed.
                raise PayloadTooLarge(
                    f"the text for {payload.slot[:80]!r} has {len(payload.text)} characters; the slot takes at most "
                    f"{limit}",
                    limit=limit,
                )
            if payload.text is not None and not payload.text.strip():
                raise InvalidInput("a supplied text is empty", code="empty_supply")
        # Resolved once, now: a reference the caller cannot see is refused before anything is stored.
        first = len(record.supplies)
        resolved = [await self._sources(record, payload, first + n) for n, payload in enumerate(payloads)]
        now = utc_now()
        supplies = [
            Supply(
                slot=payload.slot,
                kind="file" if _name(payload) else "text" if payload.text is not None else
                "document" if payload.document_id else "span",
                text=payload.text,
                document_id=payload.document_id,
                source_ref=payload.source_ref,
                name=_name(payload),
                supplied_by=principal.user,
                supplied_at=now,
            )
            for payload in payloads
        ]  # fmt: skip
        record = record.model_copy(update={"supplies": [*record.supplies, *supplies]})
        metrics().context_requests.add(len(supplies), {"orc.handoff.event": "supplied"})
        if record.missing_slots:
            await self._requests.replace(record, etag)
            return ContextUpdate(
                conversation_id=conversation_id,
                request_id=request_id,
                supplied=sorted({supply.slot for supply in record.supplies}),
                missing=record.missing_slots,
                required=record.required,
                expires_at=record.expires_at,
            )
        # Supplies of earlier calls (a request filled in several) are resolved now, this call's as they were.
        earlier = [await self._sources(record, supply, n) for n, supply in enumerate(record.supplies[:first])]
        sources = [source for found in [*earlier, *resolved] for source in found]
        return await self._resume(record, etag, "supplied", sources)

    async def supplyable(self, principal: Principal, conversation_id: str, request_id: str) -> ContextRequestRecord:
        """The request, if a supply could still move it on: :class:`NotFound` (404) or :class:`Conflict` (409, it
        ended or was superseded) otherwise. Checked before a supply's files are read, so that one sent to a request
        that is unknown or over costs no upload and no extraction; :meth:`supply` checks again as it writes."""
        record, _ = await self._pending(principal, conversation_id, request_id)
        return record

    async def run_without(self, principal: Principal, conversation_id: str, request_id: str) -> Resumption:
        """Resume the turn without the context; its answer says so."""
        record, etag = await self._pending(principal, conversation_id, request_id)
        note = "\n\n(Answered without the requested context: you chose to go on without it.)"
        return await self._resume(record, etag, "run_without", [], note)

    async def cancel(self, principal: Principal, conversation_id: str, request_id: str) -> ContextRequestRecord:
        """End the request without an answer."""
        record, etag = await self._pending(principal, conversation_id, request_id)
        return await self._finish(record, etag, "cancelled")

    async def expire(self, partition_key: str, request_id: str, now: datetime) -> Resumption | None:
        """The fallback of a request whose deadline passed: resume without the context (``None`` when it ended
        meanwhile or was superseded)."""
        found = await self._requests.by_partition(partition_key, request_id)
        if found is None:
            return None
        record, etag = found
        if record.status != "pending":
            await self._requests.forget_deadline(request_id)  # ended meanwhile: nothing left to expire
            return None
        if record.expires_at > now.astimezone(UTC).isoformat():
            return None
        if await self._superseded(record, etag):
            return None
        minutes = max(1, round(self.timeout_seconds / 60))
        note = f"\n\n(Answered without the requested context: none was supplied within {minutes} minute(s).)"
        try:
            return await self._resume(record, etag, "expired", [], note)
        except Conflict:
            return None  # another instance moved it on

    async def remind(self, partition_key: str, request_id: str, now: datetime) -> RequestEvent | None:
        """Record the reminder of a pending request whose reminder is due; the reminder (a new one, or the one an
        earlier call or another instance recorded), or ``None`` when the request ended or is not due yet."""
        found = await self._requests.by_partition(partition_key, request_id)
        if found is None:
            return None
        record, etag = found
        sent = next((event for event in record.events if event.type == "reminder"), None)
        if sent is not None or record.status != "pending":
            return sent
        stamp = now.astimezone(UTC).isoformat()
        if record.remind_at is None or record.remind_at > stamp or record.expires_at <= stamp:
            return None  # not due yet, or past the deadline already: a reminder would come too late
        left = max(0.0, (datetime.fromisoformat(record.expires_at) - now).total_seconds())
        reminder = RequestEvent(
            type="reminder",
            at=now.astimezone(UTC).isoformat(),
            note=f"The answer is still waiting for context; without it, it goes on in {_duration(left)}.",
        )
        try:
            await self._requests.replace(record.model_copy(update={"events": [*record.events, reminder]}), etag)
        except Conflict:
            return None  # moved on meanwhile (supplied, or another instance reminded): the next look tells
        metrics().context_requests.add(1, {"orc.handoff.event": "reminded"})
        return reminder

    async def remind_due(self, now: datetime) -> int:
        """Record the reminders that are due (the embedded sweeper and the Azure timer call this); how many."""
        reminded = 0
        for entry in await self._requests.reminders_due(now):
            event = await self.remind(str(entry["partition_key"]), str(entry["request_id"]), now)
            if event is not None:
                await self._requests.reminded(entry)
                reminded += 1
        return reminded

    async def request(self, principal: Principal, conversation_id: str, request_id: str) -> ContextRequestRecord:
        """The request as stored; :class:`~orc.errors.NotFound` ``context_request_not_found`` when there is none."""
        record, _ = await self._requests.get(principal, conversation_id, request_id)
        return record

    async def due(self, now: datetime) -> list[tuple[str, str]]:
        """(partition key, request id) of the pending requests whose deadline passed by ``now``."""
        return await self._requests.due(now)

    async def history(self, principal: Principal, conversation_id: str) -> list[dict[str, object]]:
        """The conversation's requests with their supplies, for its history."""
        validate_identifier(conversation_id, what="conversation")
        return [record.public() for record in await self._requests.for_conversation(principal, conversation_id)]

    # -- helpers -------------------------------------------------------------------------------------------------

    async def _pending(
        self, principal: Principal, conversation_id: str, request_id: str
    ) -> tuple[ContextRequestRecord, str]:
        validate_identifier(conversation_id, what="conversation")
        validate_identifier(request_id, what="context request")
        record, etag = await self._requests.get(principal, conversation_id, request_id)
        if record.status != "pending":
            raise Conflict(f"the context request is {record.status}", code=f"context_request_{record.status}")
        if await self._superseded(record, etag):
            raise Conflict("a newer message superseded the context request", code="context_request_superseded")
        if record.expires_at <= datetime.now(UTC).isoformat():
            raise Conflict("the context request expired; the turn answers without it", code="context_request_expired")
        return record, etag

    async def _superseded(self, record: ContextRequestRecord, etag: str) -> bool:
        """Whether a newer turn was stored in the conversation since the pause (it then marks the request)."""
        summary = await self._conversations.get(record.principal, record.conversation_id)
        if summary is None or summary.message_count // 2 <= record.after_seq:
            return False
        await self.supersede(record, etag)
        return True

    async def supersede(self, record: ContextRequestRecord, etag: str) -> None:
        """Mark a pending request superseded by a newer message."""
        with contextlib.suppress(Conflict):  # it moved on meanwhile: its own end stands
            await self._finish(record, etag, "superseded", note="a newer message came first")

    async def supersede_pending(self, principal: Principal, conversation_id: str) -> None:
        """Mark the conversation's pending requests superseded (a new message was answered)."""
        for record in await self._requests.for_conversation(principal, conversation_id):
            if record.status == "pending":
                try:
                    _, etag = await self._requests.get(principal, conversation_id, record.request_id)
                except NotFound:
                    continue
                await self.supersede(record, etag)

    async def _finish(
        self,
        record: ContextRequestRecord,
        etag: str,
        outcome: Ending,
        *,
        note: str | None = None,
    ) -> ContextRequestRecord:
        """The one terminal transition: the request ends with ``outcome`` (its user message answered, or cancelled
        when no answer comes), written on the condition that it is still as read, so one instance ends it."""
        now = utc_now()
        status = _STATUS[outcome]
        answered = outcome in ("supplied", "run_without", "expired")
        event = RequestEvent(type=status, at=now, note=outcome if answered else note)
        ended = record.model_copy(
            update={
                "status": status,
                "user_message_status": "answered" if answered else "cancelled",
                "ended_at": now,
                "outcome": outcome,
                "events": [*record.events, event],
            }
        )
        await self._requests.replace(ended, etag)
        metrics().context_requests.add(1, {"orc.handoff.event": outcome})
        return ended

    async def _resume(
        self, record: ContextRequestRecord, etag: str, outcome: Outcome, supplied: list[SourceSpan], note: str = ""
    ) -> Resumption:
        ended = await self._finish(record, etag, outcome)
        waited = (datetime.now(UTC) - datetime.fromisoformat(record.created_at)).total_seconds()
        metrics().context_fulfilment.record(waited * 1000, {"orc.handoff.outcome": outcome})
        log.info("context request %s: %s after %.1f s", record.request_id, outcome, waited)
        return Resumption(ended, outcome, supplied, note)

    async def _sources(
        self, record: ContextRequestRecord, payload: SupplyPayload | Supply, index: int
    ) -> list[SourceSpan]:
        """The sources a payload (or the stored supply it became) adds to the answer."""
        if payload.text is not None:
            label = payload.slot.replace(":", "-").replace(" ", "-")[:60]
            return [
                SourceSpan(
                    ref=f"{SUPPLIED_DOCUMENT}::{label}-{index + 1}",
                    document=_name(payload) or SUPPLIED_DOCUMENT,
                    span_id=f"{label}-{index + 1}",
                    page=None,
                    text=payload.text.strip(),
                )
            ]
        scope = DocumentScope(
            session_id=record.conversation_id,
            focus=ContextRef.parse(record.focus_context.type, record.focus_context.id)
            if record.focus_context
            else None,
            include_historical=True,
        )
        principal = record.principal
        try:
            if payload.source_ref is not None:
                found = await self._documents.span(principal, scope, payload.source_ref)
                where = {"document": found.document, "document_id": found.document_id}
                return [SourceSpan.model_validate({**span.model_dump(), **where}) for span in found.spans]
            assert payload.document_id is not None
            hits = await self._documents.search(
                principal, scope, record.question, limit=SPANS_PER_DOCUMENT, document_ids=[payload.document_id]
            )
        except OrcError as exc:
            if exc.status == 404:
                raise NotFound("that document or span is not available here", code="supply_not_found") from None
            raise
        # A search hit carries every field of a source (and more: its score, locator and context).
        return [SourceSpan.model_validate(hit, from_attributes=True) for hit in hits.results]


Move = Callable[[Handoff], Awaitable[Resumption | ContextUpdate]]
"""How a paused turn's request moves on (supply, run-without, expiry): run by the turn service once it admitted the
turn, so a refused caller's request stays as it was."""


def supplying(principal: Principal, conversation_id: str, request_id: str, payloads: Sequence[SupplyPayload]) -> Move:
    """The move of a supply (:meth:`Handoff.supply`)."""
    return lambda handoff: handoff.supply(principal, conversation_id, request_id, payloads)


def running_without(principal: Principal, conversation_id: str, request_id: str) -> Move:
    """The move of run-without (:meth:`Handoff.run_without`)."""
    return lambda handoff: handoff.run_without(principal, conversation_id, request_id)


def _name(payload: SupplyPayload | Supply) -> str | None:
    """The file name a payload (or the stored supply it became) came with: only an adapter's text has one."""
    return payload.name if isinstance(payload, SuppliedText | Supply) else None


def _duration(seconds: float) -> str:
    if seconds >= 90:
        return f"{round(seconds / 60)} minutes"
    return f"{max(1, round(seconds))} seconds"
