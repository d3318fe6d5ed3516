"""Documents attached to an organization, folder or usecase: blob, catalog record, processing, removal.

Records are ``cd:{type}:{id}:{document_id}`` items in the organization's shared partition; blobs are at
``{organization}/contexts/{type}/{id}/{filename}``. Uploading a name the context already has replaces that
document in place (same ``document_id``); identical content is reported unchanged and not processed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from orc.admission import UNLIMITED, Admission
from orc.clock import utc_now
from orc.documents.catalog.contexts import ContextDirectory, organization_partition
from orc.documents.intake.processing import DocumentLocation, DocumentProcessor, ProcessingJob, ProcessingResult
from orc.documents.intake.uploads import (
    Upload,
    check_uploads,
    upload_wait_seconds,
    uploading,
)
from orc.documents.records import ContextDocument, ContextRef
from orc.documents.sessions.service import refuse_folder_conflicts
from orc.errors import NotFound, OrcError
from orc.names import BlobPaths, validate_identifier
from orc.principal import Principal
from orc.search.text_store import TextStore
from orc.storage.ports import BlobStore, DocumentCollection

_PREFIX = "cd:"


def _context_prefix(ref: ContextRef) -> str:
    return f"{_PREFIX}{ref.type}:{ref.id}:"


def _item_id(ref: ContextRef, document_id: str) -> str:
    return f"{_context_prefix(ref)}{document_id}"


def context_location(organization: str, record: ContextDocument) -> DocumentLocation:
    """Where a context document's record, text and blob are."""
    ref = ContextRef(record.context_type, record.context_id)
    return DocumentLocation(
        partition_key=organization_partition(organization),
        item_id=_item_id(ref, record.document_id),
        document_id=record.document_id,
        blob_path=BlobPaths.context_blob(organization, ref.type, ref.id, record.filename),
        filename=record.filename,
    )


@dataclass(frozen=True, slots=True)
class UploadedDocument:
    """A document an upload touched, its diff and (when it is being processed) its job."""

    record: ContextDocument
    diff: Literal["new", "changed", "unchanged"]
    job: asyncio.Task[ProcessingResult] | None


class ContextDocuments:
    """Upload, list and remove the documents of contexts in the caller's organization."""

    def __init__(
        self,
        catalog: DocumentCollection,
        blobs: BlobStore,
        directory: ContextDirectory,
        processor: DocumentProcessor,
        texts: TextStore,
        *,
        max_upload_bytes: int,
        admission: Admission = UNLIMITED,
    ) -> None:
        self._catalog = catalog
        self._admission = admission
        self._blobs = blobs
        self._directory = directory
        self._processor = processor
        self._texts = texts
        self._max_upload_bytes = max_upload_bytes

    @property
    def max_upload_bytes(self) -> int:
        """The largest file (and upload request body) accepted."""
        return self._max_upload_bytes

    async def add(
        self,
        principal: Principal,
        ref: ContextRef,
        uploads: Sequence[Upload],
        *,
        wait_seconds: float | None = None,
    ) -> list[UploadedDocument]:
        """Store the uploads in the context and process them in the background.

        Everything is checked before the first storage call (names, sizes, empty files, 415 for unsupported
        types; the context must exist). Waits up to ``wait_seconds`` for processing, then reports each
        document's status as it is.
        """
        check_uploads(uploads, self._max_upload_bytes)
        await self._directory.get(principal, ref)
        async with uploading(self._admission, principal, uploads):
            return await self._add(
                principal, ref, uploads, upload_wait_seconds() if wait_seconds is None else wait_seconds
            )

    async def _add(
        self, principal: Principal, ref: ContextRef, uploads: Sequence[Upload], wait_seconds: float
    ) -> list[UploadedDocument]:
        existing = {record.filename: record for record in await self.documents(principal, ref)}
        refuse_folder_conflicts([upload.filename for upload in uploads], existing)
        touched: list[UploadedDocument] = []
        for upload in uploads:
            previous = existing.get(upload.filename)
            digest = upload.sha256
            if previous is not None and previous.content_hash == digest and previous.status != "failed":
                touched.append(UploadedDocument(previous, "unchanged", None))
                continue
            # A failed document uploaded again is processed again (the failure may have been transient).
            record, job = await self._store(principal, ref, upload, digest, previous)
            existing[upload.filename] = record
            diff: Literal["new", "changed", "unchanged"] = (
                "new" if previous is None else "unchanged" if previous.content_hash == digest else "changed"
            )
            touched.append(UploadedDocument(record, diff, job))
        await self._processor.wait([doc.job for doc in touched if doc.job], wait_seconds)
        return [
            UploadedDocument(await self._current(principal, doc.record), doc.diff, doc.job) if doc.job else doc
            for doc in touched
        ]

    async def _store(
        self, principal: Principal, ref: ContextRef, upload: Upload, digest: str, previous: ContextDocument | None
    ) -> tuple[ContextDocument, asyncio.Task[ProcessingResult]]:
        now = utc_now()
        content_type = upload.content_type or "application/octet-stream"
        record = ContextDocument(
            document_id=previous.document_id if previous else f"doc-{uuid.uuid4().hex}",
            filename=upload.filename,
            context_type=ref.type,
            context_id=ref.id,
            size_bytes=len(upload.data),
            content_type=content_type,
            content_hash=digest,
            uploaded_by=principal.user,
            status="uploading",
            created_at=previous.created_at if previous else now,
            updated_at=now,
        )
        location = context_location(principal.organization, record)
        submitted = ProcessingJob(location, digest, upload.content_type)
        # Leased first: a crash from here on leaves work the next sweep finds (orc.documents.intake.recovery).
        await self._processor.hold(submitted)
        # The record first, so the upload shows as "uploading" while a large blob is being written.
        await self._catalog.upsert(location.partition_key, location.item_id, _body(record))
        try:
            await self._blobs.put(
                location.blob_path, upload.data, content_type=content_type, metadata={"sha256": digest}
            )
        except BaseException:
            failed = record.model_copy(
                update={"status": "failed", "status_reason": "the upload did not complete; retry"}
            )
            # The lease lets a sweep settle the record later; an outage here must not replace the exception in flight.
            with contextlib.suppress(OrcError):
                await self._catalog.upsert(location.partition_key, location.item_id, _body(failed))
            raise
        record = record.model_copy(update={"status": "processing", "updated_at": utc_now()})
        await self._catalog.upsert(location.partition_key, location.item_id, _body(record))
        job = self._processor.submit(submitted)
        return record, job

    async def _current(self, principal: Principal, record: ContextDocument) -> ContextDocument:
        location = context_location(principal.organization, record)
        item = await self._catalog.get(location.partition_key, location.item_id)
        return ContextDocument.model_validate(item.body) if item else record

    async def documents(self, principal: Principal, ref: ContextRef) -> list[ContextDocument]:
        """The documents of exactly this context (not the ones it makes available), in upload order."""
        items = await self._catalog.query(
            organization_partition(principal.organization), id_prefix=_context_prefix(ref), order_by="created_at"
        )
        return [ContextDocument.model_validate(item.body) for item in items]

    async def in_contexts(self, organization: str, refs: Sequence[ContextRef]) -> list[dict[str, Any]]:
        """The stored records (as JSON bodies) of every context in ``refs``: one query per context, or one scan
        of the organization when there are many contexts (an organization focus includes all of them).

        Bodies, not models: availability turns each into a listing in one validation, which is what keeps a
        1,000-document listing fast.
        """
        partition = organization_partition(organization)
        if len(refs) > 4:
            wanted = {(ref.type, ref.id) for ref in refs}
            items = await self._catalog.query(partition, id_prefix=_PREFIX)
            return [item.body for item in items if (item.body["context_type"], item.body["context_id"]) in wanted]
        batches = await asyncio.gather(
            *(self._catalog.query(partition, id_prefix=_context_prefix(ref)) for ref in refs)
        )
        return [item.body for batch in batches for item in batch]

    async def remove(self, principal: Principal, ref: ContextRef, document_id: str) -> ContextDocument:
        """Delete one document: blob, stored text and record. :class:`NotFound` when the context has no such id."""
        validate_identifier(document_id, what="document")
        await self._directory.get(principal, ref)
        partition = organization_partition(principal.organization)
        item = await self._catalog.get(partition, _item_id(ref, document_id))
        if item is None:
            raise NotFound("no such document in this context", code="document_not_found")
        record = ContextDocument.model_validate(item.body)
        location = context_location(principal.organization, record)
        await self._blobs.delete(location.blob_path)
        await self._texts.delete(partition, document_id)
        await self._catalog.delete(partition, location.item_id)
        await self._processor.unindex(principal.organization, document_id)
        return record


def _body(record: ContextDocument) -> dict[str, object]:
    return {"kind": "context_document", **record.model_dump(mode="json")}
