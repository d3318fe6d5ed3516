"""document_chat at the service level: the scenarios of document-chat-workflow.md "Testing Scenarios"."""

from __future__ import annotations

import re
from contextlib import AsyncExitStack
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from orc.composition import Stores, build_document_services, build_foundation
from orc.contracts import FileRef
from orc.documents.chat.document_chat import DocumentChatService
from orc.documents.chat.file_cache import ProcessedFileCache
from orc.documents.intake.uploads import Upload
from orc.errors import ExtractionError, InvalidInput, InvalidName, NotFound, PayloadTooLarge, ServiceUnavailable
from orc.names import BlobPaths
from orc.principal import Principal
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from orc.testing import FunctionChatModel
from tests.documents.doubles import CountingBlobStore, FakeClock, citing_model
from tests.documents.library_support import extraction_pool
from tests.documents.pdf_factory import make_pdf

ALICE = Principal(organization="acme", user="alice")
BOB = Principal(organization="acme", user="bob")
CONVERSATION = "conv-1"
TTL = 600.0

LEASE = make_pdf(
    [
        ["Residential lease between Acme Homes and Alice.", "The term is twelve months."],
        ["The monthly rent is 1200 EUR, due on the first day of each month.", "Pets are not allowed."],
    ]
)
HANDBOOK = b"Employee handbook.\n\nVacation: every employee has 25 days of paid vacation per year.\n"


class Harness:
    """A service over a counting blob store, a fake clock and a citing model."""

    def __init__(self, *, max_document_bytes: int = 1_000_000, max_sources: int = 8) -> None:
        self.blobs = CountingBlobStore()
        self.clock = FakeClock()
        self.model = citing_model()
        self.service = DocumentChatService(
            self.blobs,
            ProcessedFileCache(TTL, clock=self.clock),
            self.model,
            model_label="test:citing",
            max_document_bytes=max_document_bytes,
            max_sources=max_sources,
            max_question_chars=200,
            max_documents=20,
            extraction_pool=extraction_pool(),
        )

    async def upload(self, name: str, data: bytes, principal: Principal = ALICE) -> None:
        path = BlobPaths.session_blob(principal.organization, principal.user, CONVERSATION, name)
        await self.blobs.put(path, data)

    def path(self, name: str, principal: Principal = ALICE) -> str:
        return BlobPaths.session_blob(principal.organization, principal.user, CONVERSATION, name)


@pytest.fixture
async def harness() -> Harness:
    harness = Harness()
    await harness.upload("lease.pdf", LEASE)
    await harness.upload("handbook.txt", HANDBOOK)
    return harness


async def test_a_first_upload_is_processed_and_gets_new_file_ids(harness: Harness) -> None:
    result = await harness.service.answer(ALICE, CONVERSATION, "How much is the monthly rent?", ["lease.pdf"], None)

    assert result.answer == "The documents say so [lease.pdf::S2]."
    assert [ref.blob_name for ref in result.files] == ["lease.pdf"]
    assert result.files[0].file_id.startswith("file-")
    assert result.metadata.cache == "miss"
    assert result.metadata.model == "test:citing"
    assert result.metadata.model_calls == 1
    assert result.metadata.usage.total_tokens > 0
    assert result.metadata.sources[0].ref == "lease.pdf::S2"
    assert result.metadata.sources[0].page == 2
    assert "1200 EUR" in result.metadata.sources[0].text
    assert result.metadata.elapsed_ms >= 0
    assert harness.blobs.gets[harness.path("lease.pdf")] == 1
    assert harness.model.calls == 1


async def test_the_model_gets_the_ranked_sources_and_the_question(harness: Harness) -> None:
    await harness.service.answer(ALICE, CONVERSATION, "  How much is the monthly rent? ", ["lease.pdf"], None)

    system, human = harness.model.requests[0].messages
    assert '<source ref="lease.pdf::S2" page="2">' in system.text
    assert "1200 EUR" in system.text
    assert human.text == "How much is the monthly rent?"


async def test_the_same_documents_with_cached_ids_reuse_them_without_a_download(harness: Harness) -> None:
    first = await harness.service.answer(ALICE, CONVERSATION, "What is the rent?", ["lease.pdf"], None)

    second = await harness.service.answer(ALICE, CONVERSATION, "Are pets allowed?", ["lease.pdf"], first.files)

    assert second.files == first.files
    assert second.metadata.cache == "hit"
    assert harness.blobs.gets[harness.path("lease.pdf")] == 1
    assert second.answer == "The documents say so [lease.pdf::S2]."


async def test_different_documents_are_processed_fresh(harness: Harness) -> None:
    first = await harness.service.answer(ALICE, CONVERSATION, "What is the rent?", ["lease.pdf"], None)

    second = await harness.service.answer(ALICE, CONVERSATION, "How many vacation days?", ["handbook.txt"], None)

    assert second.metadata.cache == "miss"
    assert [ref.blob_name for ref in second.files] == ["handbook.txt"]
    assert second.files[0].file_id != first.files[0].file_id
    assert second.answer == "The documents say so [handbook.txt::S1]."


async def test_expired_ids_fall_back_to_fresh_processing_with_new_ids(harness: Harness) -> None:
    first = await harness.service.answer(ALICE, CONVERSATION, "What is the rent?", ["lease.pdf"], None)
    harness.clock.advance(TTL + 1)

    second = await harness.service.answer(ALICE, CONVERSATION, "What is the rent?", ["lease.pdf"], first.files)

    assert second.metadata.cache == "miss"
    assert second.files[0].file_id != first.files[0].file_id
    assert harness.blobs.gets[harness.path("lease.pdf")] == 2


async def test_a_replaced_blob_is_reprocessed_even_with_a_valid_id(harness: Harness) -> None:
    first = await harness.service.answer(ALICE, CONVERSATION, "vacation days?", ["handbook.txt"], None)
    await harness.upload("handbook.txt", b"Vacation: 30 days per year from now on.")

    second = await harness.service.answer(ALICE, CONVERSATION, "vacation days?", ["handbook.txt"], first.files)

    assert second.metadata.cache == "miss"
    assert second.files[0].file_id != first.files[0].file_id
    assert "30 days" in second.metadata.sources[0].text


async def test_unknown_ids_are_ignored_and_replaced(harness: Harness) -> None:
    stale = [FileRef(file_id="file-made-up", blob_name="lease.pdf")]

    result = await harness.service.answer(ALICE, CONVERSATION, "rent?", ["lease.pdf"], stale)

    assert result.metadata.cache == "miss"
    assert result.files[0].file_id != "file-made-up"


async def test_another_users_file_id_never_reads_their_document(harness: Harness) -> None:
    alices = await harness.service.answer(ALICE, CONVERSATION, "rent?", ["lease.pdf"], None)

    with pytest.raises(NotFound):
        await harness.service.answer(BOB, CONVERSATION, "rent?", ["lease.pdf"], alices.files)

    await harness.upload("lease.pdf", make_pdf([["Bob's own lease: the rent is 900 EUR."]]), principal=BOB)
    bobs = await harness.service.answer(BOB, CONVERSATION, "rent?", ["lease.pdf"], alices.files)
    assert bobs.metadata.cache == "miss"
    assert "900 EUR" in bobs.metadata.sources[0].text


async def test_several_documents_are_answered_together_in_the_requested_order(harness: Harness) -> None:
    first = await harness.service.answer(
        ALICE, CONVERSATION, "rent and vacation days?", ["handbook.txt", "lease.pdf"], None
    )
    refs = {source.ref for source in first.metadata.sources}

    assert [ref.blob_name for ref in first.files] == ["handbook.txt", "lease.pdf"]
    assert {"handbook.txt::S1", "lease.pdf::S2"} <= refs

    # Reuse is all-or-nothing per call: one cached id and one new document is a miss.
    partial = await harness.service.answer(ALICE, CONVERSATION, "rent?", ["handbook.txt", "lease.pdf"], first.files[:1])
    assert partial.metadata.cache == "miss"
    assert partial.files[0] == first.files[0]
    assert harness.blobs.gets[harness.path("handbook.txt")] == 1


async def test_document_names_are_normalized_before_use(harness: Harness) -> None:
    result = await harness.service.answer(ALICE, CONVERSATION, "rent?", [" lease.pdf ", "lease.pdf"], None)

    assert [ref.blob_name for ref in result.files] == ["lease.pdf"]


async def test_when_nothing_matches_the_model_sees_the_start_of_each_document(harness: Harness) -> None:
    result = await harness.service.answer(
        ALICE, CONVERSATION, "Quantum chromodynamics?", ["lease.pdf", "handbook.txt"], None
    )

    assert [source.ref for source in result.metadata.sources] == [
        "lease.pdf::S1",
        "handbook.txt::S1",
        "lease.pdf::S2",
    ]


async def test_sources_are_capped_at_max_sources() -> None:
    harness = Harness(max_sources=2)
    text = "\n\n".join(f"Clause {index}: the rent rule number {index}. " * 20 for index in range(10))
    await harness.upload("rules.txt", text.encode())

    result = await harness.service.answer(ALICE, CONVERSATION, "rent rule", ["rules.txt"], None)

    assert len(result.metadata.sources) == 2


async def test_a_missing_document_is_not_found_and_names_it(harness: Harness) -> None:
    with pytest.raises(NotFound, match=re.escape("'missing.pdf' is not attached to this conversation")):
        await harness.service.answer(ALICE, CONVERSATION, "rent?", ["lease.pdf", "missing.pdf"], None)

    assert harness.model.calls == 0


async def test_a_document_in_another_conversation_is_not_found(harness: Harness) -> None:
    with pytest.raises(NotFound):
        await harness.service.answer(ALICE, "conv-2", "rent?", ["lease.pdf"], None)


@pytest.mark.parametrize("name", ["../bob/conv-1/lease.pdf", "/acme/alice/conv-1/lease.pdf", "a\\b.pdf"])
async def test_an_invalid_name_is_refused_before_any_storage_call(harness: Harness, name: str) -> None:
    with pytest.raises(InvalidName):
        await harness.service.answer(ALICE, CONVERSATION, "rent?", [name], None)

    assert not harness.blobs.heads
    assert not harness.blobs.gets


async def test_an_invalid_conversation_id_is_refused(harness: Harness) -> None:
    with pytest.raises(InvalidName):
        await harness.service.answer(ALICE, "../conv-1", "rent?", ["lease.pdf"], None)


@pytest.mark.parametrize("question", ["", "   \n"])
async def test_an_empty_question_is_invalid_input(harness: Harness, question: str) -> None:
    with pytest.raises(InvalidInput, match="question must not be empty"):
        await harness.service.answer(ALICE, CONVERSATION, question, ["lease.pdf"], None)


async def test_a_question_over_the_limit_is_too_large(harness: Harness) -> None:
    with pytest.raises(PayloadTooLarge):
        await harness.service.answer(ALICE, CONVERSATION, "x" * 201, ["lease.pdf"], None)


async def test_no_document_names_is_invalid_input(harness: Harness) -> None:
    with pytest.raises(InvalidInput, match="at least one document"):
        await harness.service.answer(ALICE, CONVERSATION, "rent?", [], None)


async def test_a_document_over_the_size_limit_is_refused_without_a_download() -> None:
    harness = Harness(max_document_bytes=100)
    await harness.upload("big.txt", b"word " * 100)

    with pytest.raises(PayloadTooLarge, match=re.escape("'big.txt' is larger than the 100 bytes limit")):
        await harness.service.answer(ALICE, CONVERSATION, "word?", ["big.txt"], None)

    assert not harness.blobs.gets


async def test_a_document_without_text_is_an_extraction_error(harness: Harness) -> None:
    await harness.upload("blank.txt", b"  \n ")

    with pytest.raises(ExtractionError, match=re.escape("'blank.txt' contains no extractable text")):
        await harness.service.answer(ALICE, CONVERSATION, "anything?", ["blank.txt"], None)


async def test_a_failing_model_is_service_unavailable_without_its_message() -> None:
    def fail(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> str:
        raise RuntimeError("POST https://secret.example/openai?key=abc failed")

    harness = Harness()
    harness.service = DocumentChatService(
        harness.blobs,
        ProcessedFileCache(TTL),
        FunctionChatModel(fail),
        model_label="broken",
        max_document_bytes=1000,
        max_question_chars=200,
        max_documents=20,
        extraction_pool=extraction_pool(),
    )
    await harness.upload("handbook.txt", HANDBOOK)

    with pytest.raises(ServiceUnavailable) as raised:
        await harness.service.answer(ALICE, CONVERSATION, "vacation?", ["handbook.txt"], None)

    assert raised.value.code == "model_unavailable"
    assert "secret" not in raised.value.message


async def test_a_file_id_issued_on_one_instance_is_reused_on_another_sharing_the_stores_without_a_download() -> None:
    blobs = CountingBlobStore()
    stores = Stores(collections=MemoryCollectionProvider(), blobs=blobs)
    async with AsyncExitStack() as stack:
        first = await build_foundation(Settings(), stack, stores=stores)
        one = await build_document_services(Settings(), stack, first, model=citing_model())
        other = await build_document_services(
            Settings(), stack, await build_foundation(Settings(), stack, stores=stores), model=citing_model()
        )
        uploaded = await first.session_files.add(ALICE, CONVERSATION, [Upload("lease.pdf", LEASE)])
        assert [file.status for file in uploaded.files] == ["ready"]

        first = await one.mcp.document_chat.answer(ALICE, CONVERSATION, "What is the rent?", ["lease.pdf"], None)
        second = await other.mcp.document_chat.answer(
            ALICE, CONVERSATION, "Are pets allowed?", ["lease.pdf"], first.files
        )

    assert first.metadata.cache == "miss"
    assert (second.metadata.cache, second.files) == ("hit", first.files)
    assert "1200 EUR" in second.metadata.sources[0].text
    # The processor downloaded the upload once; both instances read the text it stored.
    assert blobs.gets[BlobPaths.session_blob("acme", "alice", CONVERSATION, "lease.pdf")] == 1


async def test_a_blob_changed_behind_the_processors_back_is_extracted_afresh() -> None:
    blobs = CountingBlobStore()
    stores = Stores(collections=MemoryCollectionProvider(), blobs=blobs)
    async with AsyncExitStack() as stack:
        foundation = await build_foundation(Settings(), stack, stores=stores)
        services = await build_document_services(Settings(), stack, foundation, model=citing_model())
        await foundation.session_files.add(ALICE, CONVERSATION, [Upload("handbook.txt", HANDBOOK)])
        path = BlobPaths.session_blob("acme", "alice", CONVERSATION, "handbook.txt")
        await blobs.put(path, b"Vacation: 30 days per year from now on.")

        result = await services.mcp.document_chat.answer(ALICE, CONVERSATION, "vacation?", ["handbook.txt"], None)

    assert "30 days" in result.metadata.sources[0].text
