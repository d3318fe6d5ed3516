"""The session list: a user's most recent conversations, with the sessions that have files but no turn yet."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest

from orc.clock import utc_now
from orc.composition import Foundation, Stores, build_foundation
from orc.conversations.models import AssistantMessage, UserMessage
from orc.documents.intake.uploads import Upload
from orc.principal import Principal
from orc.sessions import LISTED_SESSIONS
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider

ALICE = Principal(organization="acme", user="alice")
LEASE = Upload("lease.txt", b"The rent is 900 euros a month.")


@pytest.fixture
async def foundation() -> AsyncIterator[Foundation]:
    async with AsyncExitStack() as stack:
        stores = Stores(collections=MemoryCollectionProvider(), blobs=MemoryBlobStore())
        yield await build_foundation(Settings(), stack, stores=stores)


async def _turn(foundation: Foundation, conversation_id: str) -> None:
    now = utc_now()
    await foundation.conversations.append_turn(
        ALICE,
        conversation_id,
        UserMessage(content="What is the rent?", created_at=now),
        AssistantMessage(content="900 euros.", created_at=now),
    )


async def test_a_session_with_files_but_no_turn_is_listed_among_the_conversations(foundation: Foundation) -> None:
    await _turn(foundation, "asked")
    await foundation.session_files.add(ALICE, "files-only", [LEASE])

    listed = await foundation.sessions.summaries(ALICE)

    assert [(s.conversation_id, s.message_count) for s in listed] == [("files-only", 0), ("asked", 2)]
    assert listed[0].title == "lease.txt"


async def test_an_older_conversation_with_files_is_not_listed_as_one_without_turns(foundation: Foundation) -> None:
    # Its files make it a session with files; beyond the most recent conversations, it must not come back as one
    # without a turn.
    await foundation.session_files.add(ALICE, "old", [LEASE])
    await _turn(foundation, "old")
    for number in range(LISTED_SESSIONS):
        await _turn(foundation, f"recent-{number:03d}")
    await foundation.session_files.add(ALICE, "files-only", [LEASE])

    listed = await foundation.sessions.summaries(ALICE)

    assert len(listed) == LISTED_SESSIONS
    assert "old" not in {summary.conversation_id for summary in listed}
    assert [s.conversation_id for s in listed if s.message_count == 0] == ["files-only"]


async def test_a_session_without_turns_behind_many_newer_emptied_ones_is_still_listed(foundation: Foundation) -> None:
    # The list reads the newest session headers first; when those are all sessions whose files were removed, it
    # must read on rather than miss the one with files.
    for number in range(3):
        await _turn(foundation, f"asked-{number}")
    await foundation.session_files.add(ALICE, "lonely", [LEASE])
    for number in range(6):
        added = await foundation.session_files.add(ALICE, f"emptied-{number}", [LEASE])
        await foundation.session_files.remove(ALICE, f"emptied-{number}", added.files[0].file_id)

    listed = await foundation.sessions.summaries(ALICE, limit=3)

    assert [summary.conversation_id for summary in listed] == ["lonely", "asked-2", "asked-1"]


async def test_a_session_without_turns_behind_newer_files_of_older_conversations_is_still_listed(
    foundation: Foundation,
) -> None:
    for number in range(4):
        await _turn(foundation, f"asked-{number}")
    await foundation.session_files.add(ALICE, "lonely", [LEASE])
    for number in (0, 1):  # files added to conversations older than the two listed
        await foundation.session_files.add(ALICE, f"asked-{number}", [LEASE])

    listed = await foundation.sessions.summaries(ALICE, limit=2)

    assert [summary.conversation_id for summary in listed] == ["lonely", "asked-3"]
