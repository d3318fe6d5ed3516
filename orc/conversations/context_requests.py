"""Context requests: what a paused turn asks for, what was supplied, and how the request ended (context handoff).

A request is one item per paused turn in the ``context_requests`` collection, in the principal's partition, so
another principal's request does not exist for them. It holds the turn's input (question, attachments, focus,
model alias), the required slots with their one-click suggestions, the supplies with their provenance, and a
status that only moves forward: ``pending`` → ``resolved`` | ``cancelled`` | ``superseded`` | ``expired``.
Writes are conditional on the item's ETag, so two instances never both resume one request.

Deadlines are also indexed in a ``context_request_deadlines`` collection under one partition, which is what the
embedded sweeper and the Azure timer trigger read to expire requests no client came back to.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from orc.contracts import UnavailableDocument
from orc.conversations.models import FocusContext
from orc.errors import Conflict, ETagMismatch, ItemNotFound, NotFound
from orc.names import validate_identifier
from orc.principal import Principal
from orc.storage.ports import DocumentCollection, StoredItem

RequestStatus = Literal["pending", "resolved", "cancelled", "superseded", "expired"]
SlotKind = Literal["document", "evidence"]
SlotPhase = Literal["before_tools", "after_tools", "answer"]
ArtifactType = Literal["document", "passage", "data"]
Urgency = Literal["low", "normal", "high"]
DEFAULT_SIZE_LIMIT = 20_000
"""The most characters one supplied text may have unless the slot asks for less."""
SupplyKind = Literal["text", "document", "span", "file"]
DEADLINES_PARTITION = "due"
_ID_PREFIX = "r:"


class SuggestedSupply(BaseModel):
    """What a one-click suggestion supplies: exactly one reference (or a text)."""

    document_id: str | None = None
    source_ref: str | None = None
    text: str | None = None


class Suggestion(BaseModel):
    """Something the user can attach with one click: a document of the focus context, a span that came close, an
    earlier answer."""

    kind: Literal["document", "span", "answer"]
    label: str
    supply: SuggestedSupply


class RequiredSlot(BaseModel):
    """One piece of context the paused turn needs (context-handoff-plan §4.1.2: phase, artifact type, key path,
    size limit, urgency)."""

    slot: str
    kind: SlotKind
    description: str
    suggestions: list[Suggestion] = Field(default_factory=list)
    phase: SlotPhase = Field(
        default="after_tools",
        description="Where the turn found the need: before any tool ran (nothing to answer from), after its "
        "evidence came in, or the answer model's own request.",
    )
    artifact_type: ArtifactType = Field(
        default="passage", description="What fits the slot: a whole document, a passage of text, or figures/data."
    )
    key_path: str | None = Field(
        default=None, description="Where the missing piece is expected, when it is known (e.g. documents/lease.pdf)."
    )
    size_limit: int = Field(
        default=DEFAULT_SIZE_LIMIT, ge=1, description="The most characters a supplied text may have; longer is refused."
    )
    urgency: Urgency = "normal"


class Supply(BaseModel):
    """One supplied payload, with its provenance."""

    slot: str
    kind: SupplyKind
    text: str | None = Field(default=None, description="The text supplied (or extracted from an uploaded file).")
    document_id: str | None = None
    source_ref: str | None = None
    name: str | None = Field(default=None, description="The uploaded file's name.")
    supplied_by: str
    supplied_at: str


RequestEventType = Literal["requested", "reminder", "resolved", "cancelled", "superseded", "expired"]


class RequestEvent(BaseModel):
    """One moment of a request's life, kept with it: asked, reminded before the deadline, ended (and how)."""

    type: RequestEventType
    at: str
    note: str | None = None


class ContextRequestRecord(BaseModel):
    """A paused turn's request for context, as stored."""

    model_config = ConfigDict(extra="ignore")

    request_id: str
    conversation_id: str
    user_message_id: str
    status: RequestStatus = "pending"
    user_message_status: Literal["waiting_context", "answered", "cancelled"] = "waiting_context"
    question: str
    blob_names: list[str] = Field(default_factory=list)
    focus_context: FocusContext | None = None
    model: str | None = Field(default=None, description="The model alias the turn was asked with.")
    principal: Principal
    after_seq: int = Field(description="The conversation's last stored turn when the request was made.")
    unavailable: list[UnavailableDocument] = Field(default_factory=list)
    required: list[RequiredSlot]
    supplies: list[Supply] = Field(default_factory=list)
    created_at: str
    expires_at: str
    ended_at: str | None = None
    outcome: str | None = Field(default=None, description="How it ended: supplied, run_without, expired, ...")
    redactions: int = Field(default=0, description="Secrets redacted from the suggestions before they were offered.")
    remind_at: str | None = Field(default=None, description="When the user is reminded (none: no reminder).")
    events: list[RequestEvent] = Field(default_factory=list, description="Asked, reminded, ended: oldest first.")

    @property
    def missing_slots(self) -> list[str]:
        """Required slots nothing has been supplied for yet."""
        supplied = {supply.slot for supply in self.supplies}
        return [slot.slot for slot in self.required if slot.slot not in supplied]

    def public(self) -> dict[str, object]:
        """The request as clients see it (no principal)."""
        return self.model_dump(mode="json", exclude={"principal", "after_seq"})


class ContextRequests:
    """Stores context requests per principal and indexes their deadlines."""

    def __init__(self, items: DocumentCollection, deadlines: DocumentCollection) -> None:
        self._items = items
        self._deadlines = deadlines

    @staticmethod
    def new_id() -> str:
        """A fresh request id."""
        return f"req-{uuid.uuid4().hex[:16]}"

    async def create(self, record: ContextRequestRecord) -> StoredItem:
        """Store a new pending request and index its deadline."""
        pk = record.principal.partition_key
        stored = await self._items.create(pk, _ID_PREFIX + record.request_id, record.model_dump(mode="json"))
        await self._deadlines.upsert(
            DEADLINES_PARTITION,
            record.request_id,
            {
                "partition_key": pk,
                "expires_at": record.expires_at,
                "request_id": record.request_id,
                "remind_at": record.remind_at,
                "reminded": False,
            },
        )
        return stored

    async def get(
        self, principal: Principal, conversation_id: str, request_id: str
    ) -> tuple[ContextRequestRecord, str]:
        """The request and its ETag; ``context_request_not_found`` for unknown ids, other conversations' and other
        principals' requests alike; ``invalid_name`` for an id that could not be one (NUL, line breaks, 255+
        characters reached the storage key and failed there as a 500)."""
        validate_identifier(conversation_id, what="conversation")
        validate_identifier(request_id, what="context request")
        item = await self._items.get(principal.partition_key, _ID_PREFIX + request_id)
        record = ContextRequestRecord.model_validate(item.body) if item else None
        if record is None or record.conversation_id != conversation_id:
            raise NotFound("no such context request in this session", code="context_request_not_found")
        return record, item.etag if item else ""

    async def replace(self, record: ContextRequestRecord, etag: str) -> str:
        """Write the request if nobody changed it since ``etag``; :class:`Conflict` ``context_request_busy``
        otherwise. Ended requests leave the deadline index."""
        try:
            stored = await self._items.replace(
                record.principal.partition_key, _ID_PREFIX + record.request_id, record.model_dump(mode="json"),
                if_match=etag,
            )  # fmt: skip
        except (ETagMismatch, ItemNotFound):
            raise Conflict(
                "the context request changed meanwhile; read it again", code="context_request_busy"
            ) from None
        if record.status != "pending":
            await self._deadlines.delete(DEADLINES_PARTITION, record.request_id)
        return stored.etag

    async def for_conversation(self, principal: Principal, conversation_id: str) -> list[ContextRequestRecord]:
        """The conversation's requests, oldest first."""
        items = await self._items.query(
            principal.partition_key, where={"conversation_id": conversation_id}, id_prefix=_ID_PREFIX
        )
        records = [ContextRequestRecord.model_validate(item.body) for item in items]
        return sorted(records, key=lambda record: record.created_at)

    async def due(self, now: datetime, *, limit: int = 100) -> list[tuple[str, str]]:
        """``(partition_key, request_id)`` of pending requests whose deadline has passed, soonest first."""
        items = await self._deadlines.query(DEADLINES_PARTITION, order_by="expires_at", limit=limit)
        stamp = now.astimezone(UTC).isoformat()
        return [
            (str(item.body["partition_key"]), str(item.body["request_id"]))
            for item in items
            if str(item.body.get("expires_at", "")) <= stamp
        ]

    async def reminders_due(self, now: datetime, *, limit: int = 100) -> list[dict[str, object]]:
        """The deadline index entries of pending requests whose reminder is due and not yet sent."""
        items = await self._deadlines.query(DEADLINES_PARTITION, order_by="expires_at", limit=limit)
        stamp = now.astimezone(UTC).isoformat()
        return [
            dict(item.body)
            for item in items
            if item.body.get("remind_at") and str(item.body["remind_at"]) <= stamp and not item.body.get("reminded")
        ]

    async def forget_deadline(self, request_id: str) -> None:
        """Drop a request's deadline index entry (it ended)."""
        await self._deadlines.delete(DEADLINES_PARTITION, request_id)

    async def reminded(self, entry: dict[str, object]) -> None:
        """Mark a deadline index entry's reminder as sent (the request itself keeps the reminder event)."""
        await self._deadlines.upsert(DEADLINES_PARTITION, str(entry["request_id"]), {**entry, "reminded": True})

    async def by_partition(self, partition_key: str, request_id: str) -> tuple[ContextRequestRecord, str] | None:
        """A request found through the deadline index (the sweeper has no principal of its own)."""
        item = await self._items.get(partition_key, _ID_PREFIX + request_id)
        if item is None:
            await self._deadlines.delete(DEADLINES_PARTITION, request_id)
            return None
        return ContextRequestRecord.model_validate(item.body), item.etag


def deadline(now: datetime, seconds: float) -> str:
    """The ISO timestamp ``seconds`` after ``now``."""
    return (now.astimezone(UTC) + timedelta(seconds=seconds)).isoformat()
