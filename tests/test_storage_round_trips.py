"""Storage round trips of a turn on the production wiring (collection checkpoints), counted on real stores."""

from __future__ import annotations

from orc.composition import build_runtime
from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.testing import FunctionChatModel
from orc.turns import TurnRequest
from tests.graph.test_document_chat_workflow import cite_first_source
from tests.support import counting_stores

DOCS = [Upload(f"doc{i}.txt", f"Document {i} says the fee is {i}00 euros.".encode()) for i in range(3)]


async def test_a_warm_document_chat_turn_makes_at_most_five_storage_round_trips() -> None:
    stores, counter = counting_stores()
    settings = Settings(storage="azure")  # collection-backed checkpoints, as on Cosmos DB
    async with build_runtime(settings, model=FunctionChatModel(cite_first_source), stores=stores) as orc:
        await orc.foundation.session_files.add(LOCAL_PRINCIPAL, "conv", DOCS)
        assert orc.documents.context_files is not None
        # The digests are made in the background; let them finish so that only the turn's calls are counted.
        assert await orc.documents.digests.wait_idle(LOCAL_PRINCIPAL, "conv", 120)
        names = [doc.filename for doc in DOCS]
        await orc.orchestrator.ask(TurnRequest(question="What is the fee?", conversation_id="conv", blob_names=names))
        counter.reset()

        result = await orc.orchestrator.ask(
            TurnRequest(question="And the fee again?", conversation_id="conv", blob_names=names)
        )

    assert result.metadata.cache == "hit"
    assert len(counter.calls) <= 5, counter.calls
    assert counter.calls[:3] == [
        "catalog.query",  # the blob names are files of this conversation
        "conversations.query",  # header + recent turns
        "blobs.list",  # current ETags of the attached documents
    ]
    # A turn that cannot pause (the default) writes no checkpoint: nothing would read it.
    assert counter.calls[3:] == [
        "conversations.create",  # the turn
        "conversations.replace",  # the header, conditioned on the ETag read above
    ]


async def test_a_first_document_chat_turn_reads_the_conversations_file_records_once() -> None:
    stores, counter = counting_stores()
    settings = Settings(storage="azure", generated_titles=False)
    async with build_runtime(settings, model=FunctionChatModel(cite_first_source), stores=stores) as orc:
        await orc.foundation.session_files.add(LOCAL_PRINCIPAL, "conv", DOCS)
        assert await orc.documents.digests.wait_idle(LOCAL_PRINCIPAL, "conv", 120)
        counter.reset()

        result = await orc.orchestrator.ask(
            TurnRequest(question="What is the fee?", conversation_id="conv", blob_names=[d.filename for d in DOCS])
        )

    assert result.metadata.cache == "miss" and result.citations  # answered from the processed texts
    assert counter.calls == [
        "catalog.query",  # the blob names are files of this conversation; the processed texts reuse these records
        "conversations.query",  # header + recent turns (none yet)
        "blobs.list",  # current ETags (and content hashes) of the attached documents
        "catalog.get",  # the session header: is its aggregate digest ready for this revision?
        "digests.get",  # the aggregate digest, for the prompt
        "conversations.create",  # the turn
        "conversations.create",  # the conversation's header
    ]
