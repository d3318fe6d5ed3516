"""The conversation repository on every collection backend: the window of recent turns a turn reads."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from orc.clock import utc_now
from orc.conversations import AssistantMessage, ConversationRepository, Turn, UserMessage
from orc.principal import Principal
from orc.storage.ports import DocumentCollection

ALICE = Principal(organization="contoso", user="alice")


async def append(conversations: ConversationRepository, conversation_id: str, count: int) -> None:
    for number in range(1, count + 1):
        now = utc_now()
        await conversations.append_turn(
            ALICE,
            conversation_id,
            UserMessage(content=f"question {number}", created_at=now),
            AssistantMessage(content=f"answer {number}", created_at=now),
        )


async def test_loading_reads_the_header_and_the_latest_turns_oldest_first(collection: DocumentCollection) -> None:
    conversations = ConversationRepository(collection)
    await append(conversations, "long", 12)
    await append(conversations, "other", 2)

    snapshot = await conversations.load(ALICE, "long", 10)

    assert snapshot.header is not None and snapshot.header.body["turn_count"] == 12
    assert [turn.seq for turn in snapshot.turns] == list(range(3, 13))
    assert [turn.user.content for turn in snapshot.turns][-1] == "question 12"


async def test_loading_a_short_conversation_returns_every_turn_and_a_new_one_none(
    collection: DocumentCollection,
) -> None:
    conversations = ConversationRepository(collection)
    await append(conversations, "short", 3)

    short = await conversations.load(ALICE, "short", 10)
    empty = await conversations.load(ALICE, "new", 10)

    assert short.header is not None and [turn.seq for turn in short.turns] == [1, 2, 3]
    assert empty.header is None and empty.turns == []


async def test_a_stored_turn_is_read_back_as_parsed_from_its_stored_body(collection: DocumentCollection) -> None:
    conversations = ConversationRepository(collection)
    await append(conversations, "kept", 2)

    first = await conversations.load(ALICE, "kept", 10)
    again = await conversations.load(ALICE, "kept", 10)
    items = await collection.query(ALICE.partition_key, where={"kind": "turn"}, order_by="seq")

    # Each stored version is parsed once and shared by later reads; it is what its stored body says.
    assert all(a is b for a, b in zip(first.turns, again.turns, strict=True))
    assert first.turns == [Turn.model_validate(item.body) for item in items]
    # A repository that did not write them (another process, after a restart) reads the same turns.
    assert (await ConversationRepository(collection).load(ALICE, "kept", 10)).turns == first.turns


async def test_a_turn_stored_again_under_the_same_id_is_read_as_stored_now(collection: DocumentCollection) -> None:
    conversations = ConversationRepository(collection)
    await append(conversations, "reused", 1)
    assert [turn.user.content for turn in await conversations.recent_turns(ALICE, "reused", 10)] == ["question 1"]

    # Deleted and started again: turn 1 has the same item id but is another version, with another ETag.
    assert await conversations.delete(ALICE, "reused")
    now = utc_now()
    await ConversationRepository(collection).append_turn(
        ALICE,
        "reused",
        UserMessage(content="a new first question", created_at=now),
        AssistantMessage(content="a new first answer", created_at=now),
    )

    assert [turn.user.content for turn in await conversations.recent_turns(ALICE, "reused", 10)] == [
        "a new first question"
    ]
    assert [turn.user.content for turn in await conversations.turns(ALICE, "reused")] == ["a new first question"]


async def test_parsed_turns_are_kept_up_to_the_limit_and_the_oldest_read_are_parsed_again(
    collection: DocumentCollection,
) -> None:
    conversations = ConversationRepository(collection, parsed_turns=2)
    await append(conversations, "bounded", 3)

    first = await conversations.load(ALICE, "bounded", 3)
    again = await conversations.load(ALICE, "bounded", 3)

    # Reading turns 1, 2, 3 in order through a cache of two parses each one again: equal, not shared.
    assert first.turns == again.turns
    assert not any(a is b for a, b in zip(first.turns, again.turns, strict=True))


def test_a_parsed_turn_cannot_be_changed_by_the_reader_that_got_it() -> None:
    now = utc_now()
    turn = Turn(
        seq=1, user=UserMessage(content="q", created_at=now), assistant=AssistantMessage(content="a", created_at=now)
    )

    with pytest.raises(ValidationError):
        turn.assistant.content = "changed"  # type: ignore[misc]
