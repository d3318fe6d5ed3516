"""Conversation history on the document-collection port: one header item and one item per turn.

A turn (the user message and the assistant message) is one item, so it is stored whole or not at all, and no
item grows with the conversation (Cosmos DB caps items at 2 MB). Turn items get consecutive sequence numbers;
two writers racing for the same number are told apart by ``create`` (exactly one wins) and the loser takes the
next number, so concurrent turns are never lost or duplicated.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from orc.clock import utc_now
from orc.contracts import Citation, FileRef, ToolCallRecord, Usage
from orc.principal import Principal
from orc.storage.ports import DocumentCollection, ETagMismatch, ItemAlreadyExists, StorageUnavailable

TITLE_CHARS = 80
_MAX_WRITE_ATTEMPTS = 50


class FocusContext(BaseModel):
    """The context a turn focuses on (DESIGN §2)."""

    type: Literal["organization", "folder", "usecase"]
    id: str


class UserMessage(BaseModel):
    """What the user asked in a turn."""

    role: Literal["user"] = "user"
    content: str
    blob_names: list[str] = Field(default_factory=list)
    created_at: str


class AssistantMessage(BaseModel):
    """What orc answered, with everything the next turn is seeded from."""

    role: Literal["assistant"] = "assistant"
    content: str
    citations: list[Citation] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    uploaded_file_refs: list[FileRef] = Field(default_factory=list)
    last_mcp_tool_used: str | None = None
    focus_context: FocusContext | None = None
    model: str | None = None
    usage: Usage = Field(default_factory=Usage)
    created_at: str


class Turn(BaseModel):
    """One stored exchange."""

    seq: int
    user: UserMessage
    assistant: AssistantMessage


class ConversationSummary(BaseModel):
    """A conversation as listed: title, message count and times."""

    conversation_id: str
    title: str
    message_count: int
    created_at: str
    updated_at: str


def _header_id(conversation_id: str) -> str:
    return f"c:{conversation_id}"


def _turn_prefix(conversation_id: str) -> str:
    return f"t:{conversation_id}:"


def _turn_id(conversation_id: str, seq: int) -> str:
    # Zero-padded so ids sort in turn order as strings too.
    return f"{_turn_prefix(conversation_id)}{seq:08d}"


class ConversationRepository:
    """Stores and reads conversations of a principal. Partition = the principal's partition key."""

    def __init__(self, collection: DocumentCollection) -> None:
        self._items = collection

    async def append_turn(
        self, principal: Principal, conversation_id: str, user: UserMessage, assistant: AssistantMessage
    ) -> Turn:
        """Store one turn atomically after the latest one; returns it with its sequence number."""
        pk = principal.partition_key
        header = await self._items.get(pk, _header_id(conversation_id))
        seq = int(header.body["turn_count"]) + 1 if header else 1
        for _ in range(_MAX_WRITE_ATTEMPTS):
            turn = Turn(seq=seq, user=user, assistant=assistant)
            body = {"kind": "turn", "conversation_id": conversation_id, **turn.model_dump(mode="json")}
            try:
                await self._items.create(pk, _turn_id(conversation_id, seq), body)
            except ItemAlreadyExists:
                seq += 1
                continue
            await self._record_in_header(principal, conversation_id, seq, user.content)
            return turn
        raise StorageUnavailable("the conversation is too busy to store this turn; retry")

    async def _record_in_header(self, principal: Principal, conversation_id: str, seq: int, question: str) -> None:
        pk = principal.partition_key
        item_id = _header_id(conversation_id)
        now = utc_now()
        for _ in range(_MAX_WRITE_ATTEMPTS):
            current = await self._items.get(pk, item_id)
            if current is None:
                body: dict[str, Any] = {
                    "kind": "conversation",
                    "conversation_id": conversation_id,
                    "title": " ".join(question.split())[:TITLE_CHARS],
                    "turn_count": seq,
                    "created_at": now,
                    "updated_at": now,
                }
                try:
                    await self._items.create(pk, item_id, body)
                    return
                except ItemAlreadyExists:
                    continue
            body = dict(current.body)
            body["turn_count"] = max(int(body["turn_count"]), seq)
            body["updated_at"] = now
            try:
                await self._items.replace(pk, item_id, body, if_match=current.etag)
                return
            except ETagMismatch:
                continue
        raise StorageUnavailable("the conversation is too busy to store this turn; retry")

    async def recent_turns(self, principal: Principal, conversation_id: str, limit: int) -> list[Turn]:
        """The latest ``limit`` turns, oldest first."""
        items = await self._items.query(
            principal.partition_key,
            id_prefix=_turn_prefix(conversation_id),
            order_by="seq",
            descending=True,
            limit=limit,
        )
        return [Turn.model_validate(item.body) for item in reversed(items)]

    async def turns(self, principal: Principal, conversation_id: str) -> list[Turn]:
        """Every turn, oldest first."""
        items = await self._items.query(
            principal.partition_key, id_prefix=_turn_prefix(conversation_id), order_by="seq"
        )
        return [Turn.model_validate(item.body) for item in items]

    async def get(self, principal: Principal, conversation_id: str) -> ConversationSummary | None:
        """The conversation's summary, or ``None`` when this principal has no such conversation."""
        item = await self._items.get(principal.partition_key, _header_id(conversation_id))
        return _summary(item.body) if item else None

    async def list(self, principal: Principal, *, limit: int = 100) -> list[ConversationSummary]:
        """The principal's conversations, most recently updated first."""
        items = await self._items.query(
            principal.partition_key,
            where={"kind": "conversation"},
            order_by="updated_at",
            descending=True,
            limit=limit,
        )
        return [_summary(item.body) for item in items]

    async def delete(self, principal: Principal, conversation_id: str) -> bool:
        """Delete the conversation and all its turns; ``False`` when there was none."""
        pk = principal.partition_key
        turns = await self._items.query(pk, id_prefix=_turn_prefix(conversation_id))
        for item in turns:
            await self._items.delete(pk, item.id)
        return await self._items.delete(pk, _header_id(conversation_id)) or bool(turns)


def _summary(body: dict[str, Any]) -> ConversationSummary:
    return ConversationSummary(
        conversation_id=body["conversation_id"],
        title=body["title"],
        message_count=2 * int(body["turn_count"]),
        created_at=body["created_at"],
        updated_at=body["updated_at"],
    )
