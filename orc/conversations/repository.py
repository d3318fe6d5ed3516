"""Conversation history on the document-collection port: one header item and one item per turn.

A turn (the user message and the assistant message) is one item, so it is stored whole or not at all, and no
item grows with the conversation (Cosmos DB caps items at 2 MB). Turn items get consecutive sequence numbers;
two writers racing for the same number are told apart by ``create`` (exactly one wins) and the loser takes the
next number, so concurrent turns are never lost or duplicated.

The header shares the turns' id prefix and, newest first, sorts before them (by id, ``…:header`` after the
zero-padded turn numbers; by ``seq``, :data:`HEADER_SEQ`), so one query reads the header, with the ETag a later
update is conditioned on, together with the recent turns.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from orc.clock import utc_now
from orc.conversations.models import AssistantMessage, ConversationSummary, Feedback, Turn, UserMessage, turn_of
from orc.conversations.titles import title_from_question
from orc.errors import ItemAlreadyExists, StorageUnavailable
from orc.principal import Principal
from orc.storage.ports import DocumentCollection, StoredItem
from orc.storage.updates import update_item

log = logging.getLogger(__name__)

HEADER_SEQ = 10**12
"""The header's sort key: greater than any turn number, so it comes first in a newest-first query."""
_MAX_WRITE_ATTEMPTS = 50
HISTORY_TURNS = 10
"""Turns of history a turn reads: the planner's follow-ups, the answer prompt's recent exchanges (cut further by
``ORC_HISTORY_TOKENS``, the budget an operator tunes) and the historical contexts a session names."""
PARSED_TURNS = 2048
"""How many parsed turns a repository keeps: the recent history of a few hundred busy conversations."""


def _turn_prefix(conversation_id: str) -> str:
    return f"t:{conversation_id}:"


def _header_id(conversation_id: str) -> str:
    return f"{_turn_prefix(conversation_id)}header"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A conversation as one read saw it: its header (``None`` before the first turn) and recent turns."""

    header: StoredItem | None
    turns: list[Turn]


def _feedback_prefix(conversation_id: str) -> str:
    # Not under the turns' prefix: the newest-first history query must meet only the header and turns.
    return f"f:{conversation_id}:"


def _feedback_id(conversation_id: str, seq: int) -> str:
    return f"{_feedback_prefix(conversation_id)}{seq:08d}"


def _turn_id(conversation_id: str, seq: int) -> str:
    # Zero-padded so ids sort in turn order as strings too.
    return f"{_turn_prefix(conversation_id)}{seq:08d}"


class ConversationRepository:
    """Stores and reads conversations of a principal. Partition = the principal's partition key.

    A stored turn never changes (it is created once and only ever deleted; feedback on its answer is an item of
    its own), so each version, named by its id and ETag, is parsed once: every turn reads the conversation's
    recent history, and validating those turns
    again would be the largest pydantic cost of a turn. The turn a write stores is kept as it was built.
    """

    def __init__(self, collection: DocumentCollection, *, parsed_turns: int = PARSED_TURNS) -> None:
        self._items = collection
        self._parsed: LRUCache[tuple[str, str, str], Turn] = LRUCache(maxsize=parsed_turns)

    def _parse(self, item: StoredItem) -> Turn:
        key = (item.partition_key, item.id, item.etag)
        turn = self._parsed.get(key)
        if turn is None:
            turn = self._parsed[key] = Turn.model_validate(item.body)
        return turn

    async def load(self, principal: Principal, conversation_id: str, limit: int) -> Snapshot:
        """The header and the latest ``limit`` turns (oldest first), in one query."""
        # Ordered by id, not by ``seq``: the zero-padded turn ids sort like their numbers and the header id
        # (``…:header``) after all of them, so the store reads ``limit + 1`` items off its primary key instead
        # of sorting the whole conversation on a JSON field, and a turn costs the same at turn 10 and turn 10,000.
        items = await self._items.query(
            principal.partition_key,
            id_prefix=_turn_prefix(conversation_id),
            descending=True,
            limit=limit + 1,
        )
        header = items[0] if items and items[0].body.get("kind") == "conversation" else None
        turns = [self._parse(item) for item in reversed(items) if item.body.get("kind") == "turn"]
        return Snapshot(header=header, turns=turns[-limit:] if limit else [])

    async def recent_turns(self, principal: Principal, conversation_id: str, limit: int) -> list[Turn]:
        """The latest ``limit`` turns, oldest first."""
        return (await self.load(principal, conversation_id, limit)).turns

    async def append_turn(
        self,
        principal: Principal,
        conversation_id: str,
        user: UserMessage,
        assistant: AssistantMessage,
        *,
        seen: Snapshot | None = None,
    ) -> Turn:
        """Store one turn atomically after the latest one; returns it with its sequence number.

        ``seen`` is the snapshot the turn was planned from: its header saves a read, and its ETag makes the
        header update conditional. A stale snapshot only costs a re-read.
        """
        pk = principal.partition_key
        header = seen.header if seen is not None else await self._items.get(pk, _header_id(conversation_id))
        seq = int(header.body["turn_count"]) + 1 if header else 1
        for _ in range(_MAX_WRITE_ATTEMPTS):
            turn = Turn(seq=seq, user=user, assistant=assistant)
            body = {"kind": "turn", "conversation_id": conversation_id, **turn.model_dump(mode="json")}
            try:
                stored = await self._items.create(pk, _turn_id(conversation_id, seq), body)
            except ItemAlreadyExists:
                seq += 1
                continue
            self._parsed[(stored.partition_key, stored.id, stored.etag)] = turn
            try:
                await self._record_in_header(principal, conversation_id, seq, user.content, header)
            except StorageUnavailable:
                # The turn item is the record and is stored; the header (title, count, times) is derived and
                # catches up on the next turn. Failing now would make the client retry and store it twice.
                log.warning("conversation header not updated after a stored turn; it catches up on the next one")
            return turn
        raise StorageUnavailable("the conversation is too busy to store this turn; retry")

    async def _record_in_header(
        self, principal: Principal, conversation_id: str, seq: int, question: str, current: StoredItem | None
    ) -> None:
        now = utc_now()

        def counted(item: StoredItem | None) -> dict[str, Any]:
            if item is None:
                return {
                    "kind": "conversation",
                    "conversation_id": conversation_id,
                    "title": title_from_question(question),
                    "title_source": "question",
                    "seq": HEADER_SEQ,
                    "turn_count": seq,
                    "created_at": now,
                    "updated_at": now,
                }
            return {**item.body, "turn_count": max(int(item.body["turn_count"]), seq), "updated_at": now}

        await update_item(
            self._items,
            principal.partition_key,
            _header_id(conversation_id),
            counted,
            busy="the conversation is too busy to store this turn; retry",
            attempts=_MAX_WRITE_ATTEMPTS,
            current=current,
        )

    async def turns(self, principal: Principal, conversation_id: str) -> list[Turn]:
        """Every turn, oldest first."""
        items = await self._items.query(
            principal.partition_key, where={"kind": "turn"}, id_prefix=_turn_prefix(conversation_id), order_by="seq"
        )
        return [self._parse(item) for item in items]

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

    async def rename(
        self, principal: Principal, conversation_id: str, title: str, *, start: bool = False
    ) -> ConversationSummary | None:
        """Set the conversation's title (a user's title is never replaced by a generated one); ``None`` if absent,
        unless ``start``: a session that has files but no turn yet is then listed from now on with its title."""
        renamed = await self._set_title(principal, conversation_id, title, source="user")
        if renamed is not None or not start:
            return renamed
        now = utc_now()
        body: dict[str, Any] = {
            "kind": "conversation",
            "conversation_id": conversation_id,
            "title": title,
            "title_source": "user",
            "seq": HEADER_SEQ,
            "turn_count": 0,
            "created_at": now,
            "updated_at": now,
        }
        try:
            return _summary((await self._items.create(principal.partition_key, _header_id(conversation_id), body)).body)
        except ItemAlreadyExists:  # its first turn was stored meanwhile
            return await self._set_title(principal, conversation_id, title, source="user")

    async def set_generated_title(self, principal: Principal, conversation_id: str, title: str) -> bool:
        """Replace the title made from the first question by a generated one, unless the user renamed it since."""
        return await self._set_title(principal, conversation_id, title, source="generated") is not None

    async def _set_title(
        self, principal: Principal, conversation_id: str, title: str, *, source: str
    ) -> ConversationSummary | None:

        def titled(item: StoredItem | None) -> dict[str, Any] | None:
            if item is None or (source == "generated" and item.body.get("title_source") == "user"):
                return None
            return {**item.body, "title": title, "title_source": source}

        stored = await update_item(
            self._items,
            principal.partition_key,
            _header_id(conversation_id),
            titled,
            busy="the conversation is too busy to rename; retry",
            attempts=_MAX_WRITE_ATTEMPTS,
        )
        return _summary(stored.body) if stored is not None else None

    async def set_feedback(
        self, principal: Principal, conversation_id: str, message_id: str, feedback: Feedback
    ) -> Feedback | None:
        """Record ``feedback`` on an answer, replacing the principal's earlier rating of it; ``None`` when the
        conversation has no such answer."""
        where = turn_of(message_id)
        if where is None or where[1] != "assistant":
            return None
        pk = principal.partition_key
        if await self._items.get(pk, _turn_id(conversation_id, where[0])) is None:
            return None
        stored = feedback.model_copy(update={"created_at": utc_now()})
        body = {"kind": "feedback", "conversation_id": conversation_id, "message_id": message_id}
        await self._items.upsert(pk, _feedback_id(conversation_id, where[0]), {**body, **stored.model_dump()})
        return stored

    async def feedback(self, principal: Principal, conversation_id: str) -> dict[str, Feedback]:
        """Message id → the feedback given on that answer."""
        items = await self._items.query(principal.partition_key, id_prefix=_feedback_prefix(conversation_id))
        return {
            str(item.body["message_id"]): Feedback.model_validate(
                {key: item.body.get(key) for key in ("rating", "comment", "created_at")}
            )
            for item in items
        }

    async def delete(self, principal: Principal, conversation_id: str) -> bool:
        """Delete the conversation, all its turns and their feedback; ``False`` when there was none."""
        pk = principal.partition_key
        for item in await self._items.query(pk, id_prefix=_feedback_prefix(conversation_id)):
            await self._items.delete(pk, item.id)
        items = await self._items.query(pk, id_prefix=_turn_prefix(conversation_id))
        # Turns first, header last: a half-finished delete still lists the conversation, so it can be retried.
        for item in sorted(items, key=lambda item: item.body.get("kind") == "conversation"):
            await self._items.delete(pk, item.id)
        return bool(items)


def _summary(body: dict[str, Any]) -> ConversationSummary:
    return ConversationSummary(
        conversation_id=body["conversation_id"],
        title=body["title"],
        message_count=2 * int(body["turn_count"]),
        created_at=body["created_at"],
        updated_at=body["updated_at"],
    )
