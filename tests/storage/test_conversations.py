"""The conversation repository on every collection backend: the window of recent turns a turn reads."""

from __future__ import annotations

from orc.clock import utc_now
from orc.conversations import AssistantMessage, ConversationRepository, UserMessage
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
