"""The files attached to a conversation (its session documents): blobs plus one catalog record each.

A file's ``file_id`` is the catalog's stable document id: uploading a file with the same name again keeps
the id and reports ``changed`` or ``unchanged`` by content hash. Every mutation bumps the session's revision.
Uploads go through the same pipeline as context documents (:mod:`orc.documents.processing`): a record moves
``uploading → processing → ready | failed`` and the text is searchable by the document tools once ``ready``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from orc.clock import utc_now
from orc.documents.processing import DocumentLocation, DocumentProcessor, ProcessingJob, ProcessingResult
from orc.documents.records import ProcessingFields
from orc.documents.text_store import TextStore
from orc.documents.uploads import UPLOAD_WAIT_SECONDS, Upload, check_uploads
from orc.errors import NotFound
from orc.names import BlobPaths, validate_identifier
from orc.principal import Principal
from orc.storage.ports import (
    BlobStore,
    DocumentCollection,
    ETagMismatch,
    ItemAlreadyExists,
    StorageUnavailable,
)

Diff = Literal["new", "changed", "unchanged", "deleted"]
_MAX_WRITE_ATTEMPTS = 50


__all__ = ["Diff", "FileChange", "Manifest", "Mutation", "SessionFile", "SessionFiles", "Upload"]


class SessionFile(ProcessingFields):
    """A session document as listed in the manifest: identity, content hash and processing state."""

    file_id: str
    filename: str
    size_bytes: int
    content_type: str
    content_hash: str
    created_at: str
    updated_at: str


class FileChange(BaseModel):
    """What a mutation did to one file."""

    file_id: str
    filename: str
    status: str
    diff: Diff


class Mutation(BaseModel):
    """The result of an upload, replace or delete: the new revision and the files it touched."""

    revision: int
    files: list[FileChange]


class Manifest(BaseModel):
    """The session's files at the latest revision."""

    session_id: str
    revision: int
    files: list[SessionFile] = Field(default_factory=list)


def _record_prefix(conversation_id: str) -> str:
    return f"sf:{conversation_id}:"


def _set_id(conversation_id: str) -> str:
    return f"sx:{conversation_id}"


def session_location(principal: Principal, conversation_id: str, record: SessionFile) -> DocumentLocation:
    """Where a session document's record, text and blob are."""
    return DocumentLocation(
        partition_key=principal.partition_key,
        item_id=_record_prefix(conversation_id) + record.file_id,
        document_id=record.file_id,
        blob_path=BlobPaths.session_blob(principal.organization, principal.user, conversation_id, record.filename),
        filename=record.filename,
    )


class SessionFiles:
    """Upload, list and remove the documents of a conversation."""

    def __init__(
        self,
        catalog: DocumentCollection,
        blobs: BlobStore,
        *,
        max_upload_bytes: int,
        processor: DocumentProcessor,
        texts: TextStore,
        wait_seconds: float = UPLOAD_WAIT_SECONDS,
    ) -> None:
        self._catalog = catalog
        self._blobs = blobs
        self._max_upload_bytes = max_upload_bytes
        self._processor = processor
        self._texts = texts
        self._wait_seconds = wait_seconds

    @property
    def max_upload_bytes(self) -> int:
        """The largest file (and upload request body) accepted."""
        return self._max_upload_bytes

    def check_uploads(self, uploads: Sequence[Upload]) -> None:
        """Reject the whole request before anything is stored: no files, bad names, empty or oversized files,
        and types orc cannot extract (415)."""
        check_uploads(uploads, self._max_upload_bytes)

    async def add(
        self,
        principal: Principal,
        conversation_id: str,
        uploads: Sequence[Upload],
        *,
        wait_seconds: float | None = None,
    ) -> Mutation:
        """Store the uploads (new names get new ids; known names are replaced in place) and process them.

        Waits up to ``wait_seconds`` (default: the configured upload wait) for processing, so small documents
        come back ``ready``; larger ones come back ``processing`` and finish in the background.
        """
        validate_identifier(conversation_id, what="conversation")
        self.check_uploads(uploads)
        existing = {record.filename: record for record in await self.files(principal, conversation_id)}
        changes: list[FileChange] = []
        jobs: list[asyncio.Task[ProcessingResult]] = []
        for upload in uploads:
            digest = upload.sha256
            previous = existing.get(upload.filename)
            if previous is not None and previous.content_hash == digest and previous.status != "failed":
                changes.append(_change(previous, "unchanged"))
                continue
            # A failed document uploaded again is processed again (the failure may have been transient).
            record, job = await self._store(principal, conversation_id, upload, digest, previous)
            existing[record.filename] = record
            jobs.append(job)
            diff: Diff = "new" if previous is None else "unchanged" if previous.content_hash == digest else "changed"
            changes.append(_change(record, diff))
        revision = await self._bump_revision(principal, conversation_id, any(c.diff != "unchanged" for c in changes))
        await self._processor.wait(jobs, self._wait_seconds if wait_seconds is None else wait_seconds)
        if jobs:
            current = {record.file_id: record for record in await self.files(principal, conversation_id)}
            changes = [
                change.model_copy(update={"status": current[change.file_id].status})
                if change.file_id in current
                else change
                for change in changes
            ]
        return Mutation(revision=revision, files=changes)

    async def _store(
        self,
        principal: Principal,
        conversation_id: str,
        upload: Upload,
        digest: str,
        previous: SessionFile | None,
    ) -> tuple[SessionFile, asyncio.Task[ProcessingResult]]:
        content_type = upload.content_type or "application/octet-stream"
        now = utc_now()
        record = SessionFile(
            file_id=previous.file_id if previous else f"doc-{uuid.uuid4().hex}",
            filename=upload.filename,
            size_bytes=len(upload.data),
            content_type=content_type,
            content_hash=digest,
            status="uploading",
            created_at=previous.created_at if previous else now,
            updated_at=now,
        )
        location = session_location(principal, conversation_id, record)
        # The record first, so the upload shows as "uploading" while a large blob is being written.
        await self._catalog.upsert(location.partition_key, location.item_id, _body(conversation_id, record))
        try:
            await self._blobs.put(
                location.blob_path, upload.data, content_type=content_type, metadata={"sha256": digest}
            )
        except BaseException:
            failed = record.model_copy(
                update={"status": "failed", "status_reason": "the upload did not complete; retry"}
            )
            await self._catalog.upsert(location.partition_key, location.item_id, _body(conversation_id, failed))
            raise
        record = record.model_copy(update={"status": "processing", "updated_at": utc_now()})
        await self._catalog.upsert(location.partition_key, location.item_id, _body(conversation_id, record))
        job = self._processor.submit(ProcessingJob(location, digest, upload.content_type))
        return record, job

    async def processing(
        self, principal: Principal, conversation_id: str
    ) -> list[tuple[SessionFile, asyncio.Task[ProcessingResult]]]:
        """The session's documents still being processed by this process, with their jobs (to await or watch)."""
        found = []
        for record in await self.files(principal, conversation_id):
            job = self._processor.running(session_location(principal, conversation_id, record))
            if job is not None:
                found.append((record, job))
        return found

    async def files(self, principal: Principal, conversation_id: str) -> list[SessionFile]:
        """The conversation's files, in upload order."""
        items = await self._catalog.query(
            principal.partition_key, id_prefix=_record_prefix(conversation_id), order_by="created_at"
        )
        return [SessionFile.model_validate(item.body) for item in items]

    async def manifest(self, principal: Principal, conversation_id: str) -> Manifest:
        """The files and the revision they belong to."""
        validate_identifier(conversation_id, what="conversation")
        header = await self._catalog.get(principal.partition_key, _set_id(conversation_id))
        files = await self.files(principal, conversation_id)
        if header is None and not files:
            raise NotFound("no such session")
        revision = int(header.body["revision"]) if header else 0
        return Manifest(session_id=conversation_id, revision=revision, files=files)

    async def require_names(self, principal: Principal, conversation_id: str, blob_names: Sequence[str]) -> None:
        """Raise :class:`NotFound` unless every name is a file of this conversation."""
        if not blob_names:
            return
        known = {record.filename for record in await self.files(principal, conversation_id)}
        missing = [name for name in blob_names if name not in known]
        if missing:
            raise NotFound(
                f"not a file of this conversation: {', '.join(repr(name) for name in missing)}; "
                "upload it to /api/sessions/{id}/context/files first",
                code="document_not_found",
            )

    async def remove(self, principal: Principal, conversation_id: str, file_id: str) -> Mutation:
        """Delete one file (blob and record)."""
        validate_identifier(conversation_id, what="conversation")
        validate_identifier(file_id, what="file")
        item_id = _record_prefix(conversation_id) + file_id
        item = await self._catalog.get(principal.partition_key, item_id)
        if item is None:
            raise NotFound("no such file in this session", code="file_not_found")
        record = SessionFile.model_validate(item.body)
        location = session_location(principal, conversation_id, record)
        await self._blobs.delete(location.blob_path)
        await self._texts.delete(location.partition_key, record.file_id)
        await self._catalog.delete(principal.partition_key, item_id)
        revision = await self._bump_revision(principal, conversation_id, True)
        return Mutation(revision=revision, files=[_change(record, "deleted")])

    async def remove_all(self, principal: Principal, conversation_id: str) -> None:
        """Delete every file of the conversation and its revision record (used when a session is deleted)."""
        for record in await self.files(principal, conversation_id):
            await self.remove(principal, conversation_id, record.file_id)
        await self._catalog.delete(principal.partition_key, _set_id(conversation_id))

    async def _bump_revision(self, principal: Principal, conversation_id: str, changed: bool) -> int:
        pk = principal.partition_key
        item_id = _set_id(conversation_id)
        for _ in range(_MAX_WRITE_ATTEMPTS):
            current = await self._catalog.get(pk, item_id)
            if current is None:
                body: dict[str, Any] = {
                    "kind": "session_set",
                    "conversation_id": conversation_id,
                    "revision": 1,
                }
                try:
                    await self._catalog.create(pk, item_id, body)
                    return 1
                except ItemAlreadyExists:
                    continue
            revision = int(current.body["revision"])
            if not changed:
                return revision
            try:
                await self._catalog.replace(
                    pk, item_id, {**current.body, "revision": revision + 1}, if_match=current.etag
                )
                return revision + 1
            except ETagMismatch:
                continue
        raise StorageUnavailable("the session is too busy; retry")


def _body(conversation_id: str, record: SessionFile) -> dict[str, Any]:
    return {"kind": "session_file", "conversation_id": conversation_id, **record.model_dump(mode="json")}


def _change(record: SessionFile, diff: Diff) -> FileChange:
    return FileChange(file_id=record.file_id, filename=record.filename, status=record.status, diff=diff)
