"""A finished turn is stored while LangGraph writes its last checkpoint, and that checkpoint cannot undo it.

Only a turn that may pause is checkpointed (a turn that cannot pause writes no checkpoint: nothing would read it)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from orc.composition import Services, build_runtime
from orc.conversations import ConversationRepository
from orc.documents.uploads import Upload
from orc.errors import ServiceUnavailable, StorageUnavailable
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.testing import FunctionChatModel
from orc.turns import TurnRequest
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
    assert await orc.documents.digests.wait_idle(LOCAL_PRINCIPAL, "conv", 30)


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
