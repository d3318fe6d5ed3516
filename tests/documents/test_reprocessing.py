"""When a document goes back into the processing pipeline (orc.documents.catalog.reprocessing), on in-memory stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from orc.documents.catalog.availability import AvailableDocument, DocumentScope
from orc.documents.catalog.reprocessing import Reprocessor, usable
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.principal import Principal
from tests.documents.memory_documents import MemoryDocuments, memory_documents

ACME = Principal(organization="acme", user="alice")
ORG = ContextRef("organization", "acme")
SCOPE = DocumentScope(focus=ORG)


async def _uploaded(documents: MemoryDocuments, text: bytes = b"Stranded text.") -> AvailableDocument:
    (added,) = await documents.context_documents.add(ACME, ORG, [Upload("a.txt", text)])
    return await _current(documents, added.record.document_id)


async def _current(documents: MemoryDocuments, document_id: str) -> AvailableDocument:
    found = (await documents.scopes().available(ACME, SCOPE)).find(document_id)
    assert found is not None
    return found


async def _set(documents: MemoryDocuments, document: AvailableDocument, **fields: object) -> AvailableDocument:
    location = document.location
    item = await documents.catalog.get(location.partition_key, location.item_id)
    assert item is not None
    await documents.catalog.replace(location.partition_key, location.item_id, {**item.body, **fields})
    return await _current(documents, document.info.document_id)


async def test_a_document_processing_without_a_job_is_orphaned_only_once_it_is_stale() -> None:
    async with memory_documents() as documents:
        document = await _set(documents, await _uploaded(documents), status="processing")
        updated = datetime.fromisoformat(document.info.updated_at)
        soon = Reprocessor(documents.catalog, documents.processor, now=lambda: updated + timedelta(minutes=1))
        later = Reprocessor(documents.catalog, documents.processor, now=lambda: updated + timedelta(minutes=6))

        assert not soon.orphaned(document)
        assert later.orphaned(document)


async def test_a_ready_document_spanned_by_an_older_chunker_is_not_usable_and_counts_as_orphaned() -> None:
    async with memory_documents() as documents:
        current = await _uploaded(documents)
        older = await _set(documents, current, chunking_version="0")

        assert usable(current) and not usable(older)
        assert documents.reprocessor().orphaned(older) and not documents.reprocessor().orphaned(current)


async def test_a_ready_document_whose_text_is_gone_is_recovered_and_ready_again() -> None:
    async with memory_documents() as documents:
        document = await _uploaded(documents)
        await documents.texts.delete(document.location.partition_key, document.info.document_id)

        job = await documents.reprocessor().recover(document)
        assert job is not None and (await _current(documents, document.info.document_id)).info.status == "processing"
        result = await job

        assert result.outcome == "ready"
        assert await documents.texts.load(
            document.location.partition_key, document.info.document_id, document.content_hash
        )


async def test_a_failed_document_is_not_recovered_by_search_but_followed_by_analyze() -> None:
    async with memory_documents() as documents:
        failed = await _set(documents, await _uploaded(documents), status="failed", status_reason="transient")
        reprocessor = documents.reprocessor()

        recovered = await reprocessor.recover(failed)
        await reprocessor.follow(failed, wait_seconds=5)

        assert recovered is None
        assert (await _current(documents, failed.info.document_id)).info.status == "ready"


async def test_a_restart_is_skipped_when_the_record_holds_other_content_meanwhile() -> None:
    async with memory_documents() as documents:
        document = await _uploaded(documents)
        await _set(documents, document, content_hash="0" * 64)

        assert await documents.reprocessor().restart(document) is None


async def test_restarting_twice_joins_the_job_already_running() -> None:
    async with memory_documents() as documents:
        document = await _uploaded(documents)
        reprocessor = Reprocessor(documents.catalog, documents.processor, now=lambda: datetime.now(UTC))

        first = await reprocessor.restart(document)
        second = await reprocessor.restart(document)

        assert first is not None and first is second
        assert (await first).outcome == "ready"
