"""The files attached to a conversation (its session documents): blobs plus one catalog record each.

A file's ``file_id`` is the catalog's stable document id: uploading a file with the same name again keeps
the id and reports ``changed`` or ``unchanged`` by content hash. Every mutation bumps the session's revision.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from orc.clock import utc_now
from orc.errors import InvalidInput, NotFound, PayloadTooLarge
from orc.names import BlobPaths, validate_blob_name, validate_identifier
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


@dataclass(frozen=True, slots=True)
class Upload:
    """One uploaded file as received: its name (the blob name), bytes and declared content type."""

    filename: str
    data: bytes
    content_type: str | None = None


class SessionFile(BaseModel):
    """A session document as listed in the manifest."""

    file_id: str
    filename: str
    size_bytes: int
    content_type: str
    content_hash: str
    status: Literal["uploading", "processing", "ready", "failed"] = "ready"
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


class SessionFiles:
    """Upload, list and remove the documents of a conversation."""

    def __init__(self, catalog: DocumentCollection, blobs: BlobStore, *, max_upload_bytes: int) -> None:
        self._catalog = catalog
        self._blobs = blobs
        self._max_upload_bytes = max_upload_bytes

    @property
    def max_upload_bytes(self) -> int:
        """The largest file (and upload request body) accepted."""
        return self._max_upload_bytes

    def check_uploads(self, uploads: Sequence[Upload]) -> None:
        """Reject the whole request before anything is stored: no files, bad names, oversized files."""
        if not uploads:
            raise InvalidInput("no files were uploaded; send one or more parts named 'files'", code="no_files")
        for upload in uploads:
            validate_blob_name(upload.filename)
            if len(upload.data) > self._max_upload_bytes:
                raise PayloadTooLarge(
                    f"{upload.filename!r} is larger than the upload limit of {self._max_upload_bytes} bytes"
                )
            if not upload.data:
                raise InvalidInput(f"{upload.filename!r} is empty", code="empty_file")

    async def add(self, principal: Principal, conversation_id: str, uploads: Sequence[Upload]) -> Mutation:
        """Store the uploads (new names get new ids; known names are replaced in place)."""
        validate_identifier(conversation_id, what="conversation")
        self.check_uploads(uploads)
        existing = {record.filename: record for record in await self.files(principal, conversation_id)}
        changes: list[FileChange] = []
        for upload in uploads:
            digest = hashlib.sha256(upload.data).hexdigest()
            previous = existing.get(upload.filename)
            if previous is not None and previous.content_hash == digest:
                changes.append(_change(previous, "unchanged"))
                continue
            record = await self._store(principal, conversation_id, upload, digest, previous)
            existing[record.filename] = record
            changes.append(_change(record, "changed" if previous else "new"))
        revision = await self._bump_revision(principal, conversation_id, any(c.diff != "unchanged" for c in changes))
        return Mutation(revision=revision, files=changes)

    async def _store(
        self,
        principal: Principal,
        conversation_id: str,
        upload: Upload,
        digest: str,
        previous: SessionFile | None,
    ) -> SessionFile:
        path = BlobPaths.session_blob(principal.organization, principal.user, conversation_id, upload.filename)
        content_type = upload.content_type or "application/octet-stream"
        await self._blobs.put(path, upload.data, content_type=content_type, metadata={"sha256": digest})
        now = utc_now()
        record = SessionFile(
            file_id=previous.file_id if previous else f"doc-{uuid.uuid4().hex}",
            filename=upload.filename,
            size_bytes=len(upload.data),
            content_type=content_type,
            content_hash=digest,
            created_at=previous.created_at if previous else now,
            updated_at=now,
        )
        body = {"kind": "session_file", "conversation_id": conversation_id, **record.model_dump(mode="json")}
        await self._catalog.upsert(principal.partition_key, _record_prefix(conversation_id) + record.file_id, body)
        return record

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
        path = BlobPaths.session_blob(principal.organization, principal.user, conversation_id, record.filename)
        await self._blobs.delete(path)
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


def _change(record: SessionFile, diff: Diff) -> FileChange:
    return FileChange(file_id=record.file_id, filename=record.filename, status=record.status, diff=diff)
