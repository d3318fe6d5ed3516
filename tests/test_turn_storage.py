"""A finished turn is stored while LangGraph writes its last checkpoint, and that checkpoint cannot undo it."""

from __future__ import annotations

import pytest

from orc.composition import build_runtime
from orc.conversations import ConversationRepository
from orc.documents.uploads import Upload
from orc.errors import ServiceUnavailable, StorageUnavailable
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.testing import FunctionChatModel
from orc.turns import TurnRequest
from tests.graph.test_document_chat_workflow import cite_first_source
from tests.support import counting_stores

ASK = TurnRequest(question="What is the rent?", conversation_id="conv", blob_names=["lease.txt"])
# Collection-backed checkpoints, as on Cosmos DB, so the checkpoint write goes through the observed stores.
AZURE_WIRING = Settings(storage="azure")


@pytest.mark.parametrize("streamed", [False, True], ids=["ask", "stream"])
async def test_a_finished_turn_whose_last_checkpoint_cannot_be_written_is_still_answered_and_stored(
    streamed: bool,
) -> None:
    stores, counter = counting_stores()
    async with build_runtime(AZURE_WIRING, model=FunctionChatModel(cite_first_source), stores=stores) as orc:
        await orc.foundation.session_files.add(
            LOCAL_PRINCIPAL, "conv", [Upload("lease.txt", b"The monthly rent is 900 euros.")]
        )
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
    async with build_runtime(AZURE_WIRING, model=FunctionChatModel(cite_first_source), stores=stores) as orc:
        await orc.foundation.session_files.add(
            LOCAL_PRINCIPAL, "conv", [Upload("lease.txt", b"The monthly rent is 900 euros.")]
        )
        counter.fail("conversations.create", StorageUnavailable("storage is unreachable"))

        with pytest.raises(ServiceUnavailable):
            await orc.orchestrator.ask(ASK)
        conversations = ConversationRepository(await stores.collections.collection("conversations"))
        assert await conversations.turns(LOCAL_PRINCIPAL, "conv") == []
    assert "checkpoints.upsert" in counter.calls
