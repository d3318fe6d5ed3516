"""A finished turn is stored while LangGraph writes its last checkpoint, and that checkpoint cannot undo it.

Only a turn that may pause is checkpointed (a turn that cannot pause writes no checkpoint: nothing would read it)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from orc.composition import Services, Stores, build_runtime
from orc.conversations import ConversationRepository
from orc.documents.intake.uploads import Upload
from orc.errors import ServiceUnavailable, StorageUnavailable
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.storage.ports import DocumentCollection, StoredItem
from orc.testing import FunctionChatModel
from orc.turns import TurnRequest
from tests.documents.gates import Gate
from tests.graph.test_document_chat_workflow import cite_first_source
from tests.support import counting_stores

ASK = TurnRequest(
    question="What is the rent?", conversation_id="conv", blob_names=["lease.txt"], context_requests="allow"
)
# Collection-backed checkpoints, as on Cosmos DB, so the checkpoint write goes through the observed stores.
AZURE_WIRING = Settings(storage="azure")


def cite_without_tools(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
    """The stand-in model, answering at once even when it is offered a tool (``request_context`` here)."""
    return cite_first_source(messages, [])


async def _with_lease(orc: Services) -> None:
    """The lease in the conversation, its digests made: a turn that may pause asks for context while its files are
    still being digested."""
    await orc.foundation.session_files.add(
        LOCAL_PRINCIPAL, "conv", [Upload("lease.txt", b"The monthly rent is 900 euros.")]
    )
    assert await orc.documents.digests.wait_idle(LOCAL_PRINCIPAL, "conv", 120)


@pytest.mark.parametrize("streamed", [False, True], ids=["ask", "stream"])
async def test_a_finished_turn_whose_last_checkpoint_cannot_be_written_is_still_answered_and_stored(
    streamed: bool,
) -> None:
    stores, counter = counting_stores()
    async with build_runtime(AZURE_WIRING, model=FunctionChatModel(cite_without_tools), stores=stores) as orc:
        await _with_lease(orc)
        counter.fail("checkpoints.upsert", StorageUnavailable("storage is unreachable"))

        if streamed:
            events = [event async for event in orc.orchestrator.stream(ASK)]
            answer = events[-1]["answer"]
            assert events[-1]["type"] == "final" and events[-1]["citations"]
        else:
            answer = (await orc.orchestrator.ask(ASK)).answer
        turns = await orc.foundation.conversations.turns(LOCAL_PRINCIPAL, "conv")

    assert "checkpoints.upsert" in counter.calls
    assert [turn.assistant.content for turn in turns] == [answer]


async def test_a_turn_that_cannot_be_stored_fails_and_stores_nothing_although_its_checkpoint_was_written() -> None:
    stores, counter = counting_stores()
    async with build_runtime(AZURE_WIRING, model=FunctionChatModel(cite_without_tools), stores=stores) as orc:
        await _with_lease(orc)
        counter.fail("conversations.create", StorageUnavailable("storage is unreachable"))

        with pytest.raises(ServiceUnavailable):
            await orc.orchestrator.ask(ASK)
        conversations = ConversationRepository(await stores.collections.collection("conversations"))
        assert await conversations.turns(LOCAL_PRINCIPAL, "conv") == []
    assert "checkpoints.upsert" in counter.calls


async def test_a_turn_that_cannot_pause_writes_no_checkpoint_and_one_that_may_pause_writes_its_last() -> None:
    stores, counter = counting_stores()
    async with build_runtime(AZURE_WIRING, model=FunctionChatModel(cite_without_tools), stores=stores) as orc:
        await _with_lease(orc)
        counter.reset()
        never = await orc.orchestrator.ask(ASK.model_copy(update={"context_requests": "never"}))
        unsaved = list(counter.calls)
        counter.reset()
        allowed = await orc.orchestrator.ask(ASK)

    assert never.answer and allowed.answer
    assert "checkpoints.upsert" not in unsaved and "conversations.create" in unsaved
    assert counter.calls.count("checkpoints.upsert") == 1


class GatedTurnWrites(MemoryCollectionProvider):
    """Memory collections whose ``conversations.create`` (a turn's write) waits at ``gate`` while it is closed."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = Gate()

    async def collection(self, name: str) -> DocumentCollection:
        inner = await super().collection(name)
        return _GatedCreates(inner, self.gate) if name == "conversations" else inner


class _GatedCreates:
    def __init__(self, inner: DocumentCollection, gate: Gate) -> None:
        self._inner, self._gate = inner, gate

    async def create(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        await self._gate.pass_through()
        return await self._inner.create(partition_key, item_id, body)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def test_a_turn_answered_before_its_reader_went_away_is_stored_all_the_same() -> None:
    collections = GatedTurnWrites()
    stores = Stores(collections=collections, blobs=MemoryBlobStore())
    async with build_runtime(Settings(), model=FunctionChatModel(cite_without_tools), stores=stores) as orc:
        await _with_lease(orc)
        collections.gate.close()
        asking = asyncio.create_task(orc.orchestrator.ask(ASK))
        await collections.gate.reached.wait()  # answered; its turn is being written

        asking.cancel()  # the reader goes away: a closed connection, a cancelled caller
        with pytest.raises(asyncio.CancelledError):
            await asking
        collections.gate.open()
    # Closing the runtime waits for the write, so the turn is there once it has closed.

    async with build_runtime(Settings(), stores=stores) as again:
        turns = await again.foundation.conversations.turns(LOCAL_PRINCIPAL, "conv")
    assert [turn.user.content for turn in turns] == [ASK.question]
