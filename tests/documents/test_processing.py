"""The processing pipeline: status lifecycle, failures that stay local, stored text and hashes, re-processing."""

from __future__ import annotations

import asyncio
from pathlib import Path

from orc.composition import Stores, build_runtime
from orc.documents.catalog.contexts import organization_partition
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.search.spans import CHUNKING_VERSION
from orc.search.text_store import TextStore, spans_hash, text_hash
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from tests.documents.gates import GatedBlobStore
from tests.documents.library_support import ACME, SESSION, library_of, memory_stores, open_runtime
from tests.documents.pdf_factory import make_pdf

ORG = ContextRef("organization", "acme")


async def test_an_upload_moves_from_uploading_to_processing_to_ready() -> None:
    blobs = GatedBlobStore()
    async with build_runtime(Settings(), stores=Stores(MemoryCollectionProvider(), blobs)) as runtime:
        blobs.puts.close()
        upload = asyncio.create_task(
            runtime.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Alpha text.")])
        )
        await blobs.puts.reached.wait()
        seen = [(await runtime.foundation.context_documents.documents(ACME, ORG))[0].status]

        blobs.gets.close()
        blobs.puts.open()
        await blobs.gets.reached.wait()
        seen.append((await runtime.foundation.context_documents.documents(ACME, ORG))[0].status)

        blobs.gets.open()
        (done,) = await upload

    assert seen == ["uploading", "processing"]
    assert done.record.status == "ready" and done.diff == "new"


async def test_a_corrupt_pdf_fails_with_a_reason_and_does_not_affect_the_other_files() -> None:
    good_pdf = make_pdf([["The warranty lasts two years."]])
    async with open_runtime() as runtime:
        uploaded = await runtime.foundation.context_documents.add(
            ACME,
            ORG,
            [
                Upload("good.pdf", good_pdf),
                Upload("broken.pdf", b"%PDF-1.7\n1 0 obj << /Type /Catalog >> broken"),
                Upload("notes.md", b"# Notes\n\nThe warranty is registered online."),
            ],
        )

    status = {doc.record.filename: (doc.record.status, doc.record.status_reason) for doc in uploaded}
    assert status["good.pdf"] == ("ready", None)
    assert status["notes.md"] == ("ready", None)
    assert status["broken.pdf"][0] == "failed"
    assert "not a readable PDF" in str(status["broken.pdf"][1])


async def test_processing_records_hashes_versions_and_page_locators() -> None:
    pages = [["Page one says hello."], ["Page two says the deposit is 900 euros."]]
    async with open_runtime() as runtime:
        library = library_of(runtime)
        (doc,) = await runtime.foundation.context_documents.add(ACME, ORG, [Upload("two.pdf", make_pdf(pages))])
        scope = await runtime.foundation.scopes.resolve(ACME, context_type="organization", context_id="acme")
        found = await library.search(ACME, scope, "deposit euros")

    record = doc.record
    assert record.chunking_version == CHUNKING_VERSION
    assert record.page_count == 2 and record.span_count == 2
    assert record.extracted_text_hash == text_hash(["Page one says hello.", "Page two says the deposit is 900 euros."])
    assert record.spans_hash is not None and len(record.spans_hash) == 64
    assert record.token_estimate is not None and record.token_estimate > 0
    assert found.results[0].ref == "two.pdf::S2"
    assert (found.results[0].page, found.results[0].locator) == (2, "page 2")


async def test_session_documents_are_searchable_right_after_upload() -> None:
    async with open_runtime() as runtime:
        library = library_of(runtime)
        mutation = await runtime.foundation.session_files.add(
            ACME, SESSION, [Upload("memo.txt", b"The parking code is 4711.")]
        )
        scope = await runtime.foundation.scopes.resolve(ACME, session_id=SESSION)
        found = await library.search(ACME, scope, "parking code")

    assert mutation.files[0].status == "ready"
    assert [hit.ref for hit in found.results] == ["memo.txt::S1"]
    assert found.results[0].origin == "session"


async def test_the_index_is_rebuilt_from_the_stored_text_in_a_new_process(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    async with build_runtime(settings) as first:
        await first.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"The rent is 900 euros.")])

    async with build_runtime(settings) as second:
        library = library_of(second)
        scope = await second.foundation.scopes.resolve(ACME, context_type="organization", context_id="acme")
        found = await library.search(ACME, scope, "rent")

    assert [hit.ref for hit in found.results] == ["a.txt::S1"]


async def test_identical_content_is_unchanged_and_not_processed_again() -> None:
    async with open_runtime() as runtime:
        (first,) = await runtime.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Same text.")])
        (again,) = await runtime.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Same text.")])

    assert again.diff == "unchanged" and again.job is None
    assert again.record.processed_at == first.record.processed_at


async def test_replacing_a_document_keeps_its_id_and_drops_the_old_text() -> None:
    stores = memory_stores()
    async with build_runtime(Settings(), stores=stores) as runtime:
        library = library_of(runtime)
        (first,) = await runtime.foundation.context_documents.add(
            ACME, ORG, [Upload("a.txt", b"Old text about apples.")]
        )
        (second,) = await runtime.foundation.context_documents.add(
            ACME, ORG, [Upload("a.txt", b"New text about pears.")]
        )
        texts = await stores.collections.collection("document_text")
        items = await texts.query(organization_partition("acme"))
        store = TextStore(texts)
        old = await store.load(organization_partition("acme"), first.record.document_id, first.record.content_hash)
        scope = await runtime.foundation.scopes.resolve(ACME, context_type="organization", context_id="acme")
        found = await library.search(ACME, scope, "apples pears")

    assert second.diff == "changed" and second.record.document_id == first.record.document_id
    assert old is None
    assert {item.body["document_id"] for item in items} == {first.record.document_id}
    assert [hit.text for hit in found.results] == ["New text about pears."]


async def test_closing_the_runtime_stops_the_job_of_a_version_replaced_while_it_was_processing() -> None:
    blobs = GatedBlobStore()
    async with build_runtime(Settings(), stores=Stores(MemoryCollectionProvider(), blobs)) as runtime:
        documents = runtime.foundation.context_documents
        blobs.gets.close()  # every job waits at its blob read, so the first version is still processing
        (first,) = await documents.add(ACME, ORG, [Upload("a.txt", b"Old text.")], wait_seconds=0)
        await blobs.gets.reached.wait()
        (second,) = await documents.add(ACME, ORG, [Upload("a.txt", b"New text.")], wait_seconds=0)

    assert first.job is not None and second.job is not None
    jobs = {"old version": first.job, "new version": second.job}
    left_running = [version for version, job in jobs.items() if not job.done()]
    for job in jobs.values():
        job.cancel()  # a job left behind would otherwise outlive this test
    assert left_running == []


async def test_removing_a_document_deletes_its_blob_text_and_record() -> None:
    stores = memory_stores()
    async with build_runtime(Settings(), stores=stores) as runtime:
        (doc,) = await runtime.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Some text.")])
        await runtime.foundation.context_documents.remove(ACME, ORG, doc.record.document_id)
        texts = await (await stores.collections.collection("document_text")).query(organization_partition("acme"))
        blobs = await stores.blobs.list("acme/")
        remaining = await runtime.foundation.context_documents.documents(ACME, ORG)

    assert texts == [] and list(blobs) == [] and remaining == []


async def _age_record(stores: Stores, document_id: str, **fields: object) -> None:
    catalog = await stores.collections.collection("catalog")
    item_id = f"cd:organization:acme:{document_id}"
    item = await catalog.get(organization_partition("acme"), item_id)
    assert item is not None
    await catalog.replace(organization_partition("acme"), item_id, {**item.body, **fields})


async def test_analyze_restarts_a_document_stranded_in_processing() -> None:
    stores = memory_stores()
    async with build_runtime(Settings(), stores=stores) as runtime:
        library = library_of(runtime)
        (doc,) = await runtime.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Stranded text.")])
        # As if the process that was processing it had died an hour ago.
        await _age_record(stores, doc.record.document_id, status="processing", updated_at="2020-01-01T00:00:00+00:00")
        scope = await runtime.foundation.scopes.resolve(ACME, context_type="organization", context_id="acme")
        result = await library.analyze(ACME, scope, doc.record.document_id)

    assert result.status == "ready"
    assert "No summary" in result.message


async def test_a_document_spanned_by_an_older_chunker_is_processed_again() -> None:
    stores = memory_stores()
    async with build_runtime(Settings(), stores=stores) as runtime:
        library = library_of(runtime)
        (doc,) = await runtime.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Versioned text.")])
        await _age_record(stores, doc.record.document_id, chunking_version="0")
        scope = await runtime.foundation.scopes.resolve(ACME, context_type="organization", context_id="acme")
        first = await library.search(ACME, scope, "versioned")
        result = await library.analyze(ACME, scope, doc.record.document_id)
        second = await library.search(ACME, scope, "versioned")

    assert first.results == [] and [d.filename for d in first.not_ready] == ["a.txt"]
    assert result.status == "ready"
    assert [hit.ref for hit in second.results] == ["a.txt::S1"]


def test_text_and_span_hashes_follow_the_spec() -> None:
    from orc.search.spans import Span

    spans = [Span("S1", None, 0, 3, "abc"), Span("S2", None, 4, 7, "def")]

    assert spans_hash(spans) != spans_hash(list(reversed(spans)))
    assert text_hash(["a", "b"]) != text_hash(["ab"])
