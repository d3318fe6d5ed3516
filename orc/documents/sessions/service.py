"""The files attached to a conversation (its session documents, which are its context files): blobs, one
catalog record each, and the session's ContextSet header (:mod:`orc.session_sets`).

A file's ``file_id`` is the catalog's stable document id: uploading a file with the same name again keeps the
id and reports ``changed`` or ``unchanged`` by content hash. Every mutation that changes something commits a new
revision and the new membership in one conditional write of the header (optionally only from an expected
revision: ``If-Match``); the records, blobs and processing jobs follow. Uploads go through the same pipeline as
context documents (:mod:`orc.documents.processing`): a record moves ``uploading → processing → ready | failed``
and the text is searchable by the document tools once ``ready``. A :class:`ContextListener` (the digest
pipeline) hears about every change and refreshes the digests in the background.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field, computed_field

from orc.clock import utc_now
from orc.documents.processing import DocumentLocation, DocumentProcessor, ProcessingJob, ProcessingResult
from orc.documents.records import ProcessingFields
from orc.documents.text_store import TextStore
from orc.documents.uploads import UPLOAD_WAIT_SECONDS, Upload, check_uploads
from orc.errors import InvalidInput, NotFound, PreconditionFailed
from orc.names import BlobPaths, validate_identifier
from orc.principal import Principal
from orc.session_sets import (
    MAX_FILES_PER_SESSION,
    AggregateState,
    ChangeSummary,
    Member,
    SessionHeader,
    SpecDigestStatus,
)
from orc.storage.ports import (
    BlobStore,
    DocumentCollection,
    ETagMismatch,
    ItemAlreadyExists,
    ItemNotFound,
    StorageUnavailable,
    StoredItem,
)

Diff = Literal["new", "changed", "unchanged", "deleted"]
_MAX_WRITE_ATTEMPTS = 50


__all__ = [
    "ContextFile",
    "ContextListener",
    "ContextSet",
    "Diff",
    "FileChange",
    "Manifest",
    "Mutation",
    "SessionFile",
    "SessionFiles",
    "Upload",
    "spec_digest_status",
]


class ContextFile(ProcessingFields):
    """A session document (context-digest-spec §3.2 ContextFile): identity, hashes, processing and digest state.

    The spec's fields are ``file_id``, ``filename``, ``mime_type``, ``size_bytes``, ``uploaded_at``,
    ``content_hash``, ``extracted_text_hash``, ``chunking_version``, ``spans_hash``, ``prompt_version``,
    ``digest_status``, ``digest_hash`` and ``digest_ref``; ``status`` is the text-processing status besides.
    """

    file_id: str
    filename: str
    size_bytes: int
    content_type: str
    content_hash: str
    created_at: str
    updated_at: str
    uploaded_at: str | None = Field(default=None, description="When the current content was uploaded.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mime_type(self) -> str:
        """The media type the file was uploaded with."""
        return self.content_type


SessionFile = ContextFile
"""The name the document services use for a session's file record."""


def spec_digest_status(status: str) -> SpecDigestStatus:
    """A stored digest status as the spec names it: ``none`` (never asked for) is ``stale``."""
    if status in ("ready", "parsing", "error"):
        return status  # type: ignore[return-value]
    return "stale"


class FileChange(BaseModel):
    """What a mutation did to one file."""

    file_id: str
    filename: str
    status: str
    digest_status: SpecDigestStatus
    diff: Diff


class Mutation(BaseModel):
    """The result of an upload, replace or delete: the new revision and the files it touched."""

    revision: int
    files: list[FileChange]


class ContextSet(BaseModel):
    """A session's context set at its latest revision (context-digest-spec §3.1) with the §8.1 banner data."""

    context_set_id: str
    session_id: str
    revision: int
    updated_at: str
    files: list[ContextFile] = Field(default_factory=list)
    aggregate_digest_status: SpecDigestStatus = "stale"
    aggregate_digest_ref: str | None = None
    aggregate_digest_error: str | None = None
    changes: ChangeSummary = Field(description="What the latest mutation did: the diff banner.")
    parsing: bool = Field(default=False, description="Whether a digest (per-file or aggregate) is being made now.")
    aggregate: AggregateState = Field(default_factory=AggregateState, exclude=True)
    """The stored aggregate state (its inputs decide whether it still matches the files); not part of the JSON."""


Manifest = ContextSet
"""The name the session routes and tools used before the digests arrived."""


class ContextListener(Protocol):
    """Hears about every change to a session's files (the digest pipeline)."""

    def files_changed(self, principal: Principal, conversation_id: str, removed: Sequence[ContextFile]) -> None:
        """The set changed (files added, replaced or ``removed``); schedule whatever must follow."""
        ...

    async def session_removed(
        self, principal: Principal, conversation_id: str, released: Sequence[ContextFile]
    ) -> None:
        """The session and all its files (``released``) are gone; forget what belongs to it."""
        ...


def _record_prefix(conversation_id: str) -> str:
    return f"sf:{conversation_id}:"


def _set_id(conversation_id: str) -> str:
    return f"sx:{conversation_id}"


def session_location(principal: Principal, conversation_id: str, record: ContextFile) -> DocumentLocation:
    """Where a session document's record, text and blob are."""
    return DocumentLocation(
        partition_key=principal.partition_key,
        item_id=_record_prefix(conversation_id) + record.file_id,
        document_id=record.file_id,
        blob_path=BlobPaths.session_blob(principal.organization, principal.user, conversation_id, record.filename),
        filename=record.filename,
    )


@dataclass(frozen=True, slots=True)
class _Planned:
    """One file of a mutation: what it does and, when content must be stored, the upload to store."""

    member: Member
    diff: Diff
    upload: Upload | None
    previous: ContextFile | None


Planner = Callable[[list[Member], dict[str, ContextFile]], list[_Planned]]


class SessionFiles:
    """Upload, replace, list and remove the documents of a conversation."""

    def __init__(
        self,
        catalog: DocumentCollection,
        blobs: BlobStore,
        *,
        max_upload_bytes: int,
        processor: DocumentProcessor,
        texts: TextStore,
        wait_seconds: float = UPLOAD_WAIT_SECONDS,
        max_files: int = MAX_FILES_PER_SESSION,
    ) -> None:
        self._catalog = catalog
        self._blobs = blobs
        self._max_upload_bytes = max_upload_bytes
        self._processor = processor
        self._texts = texts
        self._wait_seconds = wait_seconds
        self._max_files = max_files
        self._listener: ContextListener | None = None
        # Mutations of one session run one at a time in this process, so the record and blob writes that follow
        # a header commit land in commit order; other sessions never wait.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @property
    def max_upload_bytes(self) -> int:
        """The largest file (and upload request body) accepted."""
        return self._max_upload_bytes

    @property
    def catalog(self) -> DocumentCollection:
        """The catalog collection the records and headers live in."""
        return self._catalog

    @property
    def processor(self) -> DocumentProcessor:
        """The processing pipeline the uploads go through."""
        return self._processor

    def listen(self, listener: ContextListener) -> None:
        """Tell ``listener`` about every change from now on (the composition root wires the digest pipeline)."""
        self._listener = listener

    def check_uploads(self, uploads: Sequence[Upload]) -> None:
        """Reject the whole request before anything is stored: no files, bad names, empty or oversized files,
        the same name twice, and types orc cannot extract (415)."""
        check_uploads(uploads, self._max_upload_bytes)
        names = [upload.filename for upload in uploads]
        if len(set(names)) != len(names):
            raise InvalidInput("the same filename appears twice in one upload", code="duplicate_filename")

    # -- mutations ---------------------------------------------------------------------------------------------

    async def add(
        self,
        principal: Principal,
        conversation_id: str,
        uploads: Sequence[Upload],
        *,
        wait_seconds: float | None = None,
        if_match: int | None = None,
    ) -> Mutation:
        """Store the uploads (new names get new ids; known names are replaced in place) and process them.

        ``if_match`` makes the mutation conditional on the set's current revision (:class:`PreconditionFailed`
        otherwise). Waits up to ``wait_seconds`` (default: the configured upload wait) for text processing, so
        small documents come back ``ready``; larger ones come back ``processing`` and finish in the background.
        Digests are never waited for.
        """
        validate_identifier(conversation_id, what="conversation")
        self.check_uploads(uploads)

        def plan(members: list[Member], records: dict[str, ContextFile]) -> list[_Planned]:
            by_name = {member.filename: member for member in members}
            return [_plan_upload(upload, by_name.get(upload.filename), records) for upload in uploads]

        return await self._mutate(principal, conversation_id, plan, if_match=if_match, wait_seconds=wait_seconds)

    async def replace(
        self,
        principal: Principal,
        conversation_id: str,
        file_id: str,
        upload: Upload,
        *,
        wait_seconds: float | None = None,
        if_match: int | None = None,
    ) -> Mutation:
        """Replace the content of one file; it keeps its id and its filename (the upload's name is not used).

        :class:`NotFound` (``file_not_found``) when the file is not in the set, deleted files included.
        """
        validate_identifier(conversation_id, what="conversation")
        validate_identifier(file_id, what="file")
        check_uploads([upload], self._max_upload_bytes)

        def plan(members: list[Member], records: dict[str, ContextFile]) -> list[_Planned]:
            member = next((m for m in members if m.file_id == file_id), None)
            if member is None:
                raise NotFound("no such file in this session", code="file_not_found")
            renamed = Upload(member.filename, upload.data, upload.content_type)
            return [_plan_upload(renamed, member, records)]

        return await self._mutate(principal, conversation_id, plan, if_match=if_match, wait_seconds=wait_seconds)

    async def remove(
        self, principal: Principal, conversation_id: str, file_id: str, *, if_match: int | None = None
    ) -> Mutation:
        """Delete one file (blob, text and record). :class:`NotFound` (``file_not_found``) when it is not in the set."""
        validate_identifier(conversation_id, what="conversation")
        validate_identifier(file_id, what="file")
        async with self._session_lock(principal, conversation_id):
            records = await self._records_by_name(principal, conversation_id)
            header, members = await self._commit(
                principal, conversation_id, records, _removal(file_id), if_match=if_match
            )
            removed = next(planned for planned in members if planned.diff == "deleted")
            record = records.get(removed.member.filename)
            if record is not None and record.file_id == file_id:
                location = session_location(principal, conversation_id, record)
                await self._blobs.delete(location.blob_path)
                await self._texts.delete(location.partition_key, record.file_id)
                await self._catalog.delete(principal.partition_key, location.item_id)
        gone = record if record is not None and record.file_id == file_id else None
        if self._listener is not None:
            self._listener.files_changed(principal, conversation_id, [gone] if gone else [])
        digest_status = spec_digest_status(gone.digest_status) if gone else "stale"
        status = gone.status if gone else "ready"
        change = FileChange(
            file_id=file_id,
            filename=removed.member.filename,
            status=status,
            digest_status=digest_status,
            diff="deleted",
        )
        return Mutation(revision=header.revision, files=[change])

    async def remove_all(self, principal: Principal, conversation_id: str) -> None:
        """Delete every file of the conversation and its header (used when a session is deleted)."""
        validate_identifier(conversation_id, what="conversation")
        async with self._session_lock(principal, conversation_id):
            records = await self.files(principal, conversation_id)
            for record in records:
                location = session_location(principal, conversation_id, record)
                await self._blobs.delete(location.blob_path)
                await self._texts.delete(location.partition_key, record.file_id)
                await self._catalog.delete(principal.partition_key, location.item_id)
            await self._catalog.delete(principal.partition_key, _set_id(conversation_id))
        if self._listener is not None:
            await self._listener.session_removed(principal, conversation_id, records)

    async def _mutate(
        self,
        principal: Principal,
        conversation_id: str,
        plan: Planner,
        *,
        if_match: int | None,
        wait_seconds: float | None,
    ) -> Mutation:
        jobs: list[asyncio.Task[ProcessingResult]] = []
        async with self._session_lock(principal, conversation_id):
            records = await self._records_by_name(principal, conversation_id)
            header, planned = await self._commit(principal, conversation_id, records, plan, if_match=if_match)
            for item in planned:
                if item.upload is not None:
                    jobs.append(await self._store(principal, conversation_id, item))
        if self._listener is not None and (jobs or any(_needs_digest(item) for item in planned)):
            replaced = [p.previous for p in planned if p.diff == "changed" and p.previous is not None]
            self._listener.files_changed(principal, conversation_id, replaced)
        await self._processor.wait(jobs, self._wait_seconds if wait_seconds is None else wait_seconds)
        current = (
            {record.file_id: record for record in await self.files(principal, conversation_id)}
            if jobs
            else {record.file_id: record for record in records.values()}
        )
        changes = []
        for item in planned:
            record = current.get(item.member.file_id)
            changes.append(
                FileChange(
                    file_id=item.member.file_id,
                    filename=item.member.filename,
                    status=record.status if record else "uploading",
                    digest_status=spec_digest_status(record.digest_status) if record else "stale",
                    diff=item.diff,
                )
            )
        return Mutation(revision=header.revision, files=changes)

    async def _commit(
        self,
        principal: Principal,
        conversation_id: str,
        records: dict[str, ContextFile],
        plan: Planner,
        *,
        if_match: int | None,
    ) -> tuple[SessionHeader, list[_Planned]]:
        """Write the new header (revision, membership, change summary) conditionally on the one read."""
        pk = principal.partition_key
        for _ in range(_MAX_WRITE_ATTEMPTS):
            item = await self._catalog.get(pk, _set_id(conversation_id))
            header = _header_of(item, conversation_id, records)
            if if_match is not None and header.revision != if_match:
                raise PreconditionFailed(
                    f"the session is at revision {header.revision}, not {if_match}; reload it and retry",
                    code="revision_mismatch",
                )
            members = list(header.files or [])
            planned = plan(members, records)
            changed = [p for p in planned if p.diff != "unchanged"]
            next_members = _apply(members, planned)
            if len(next_members) > self._max_files:
                raise InvalidInput(f"a session holds at most {self._max_files} files", code="too_many_files")
            revision = header.revision + 1 if changed else header.revision
            counts = {diff: sum(1 for p in planned if p.diff == diff) for diff in ("new", "changed", "deleted")}
            update: dict[str, Any] = {
                "files": next_members,
                "last_change": ChangeSummary(revision=revision, unchanged=len(planned) - len(changed), **counts),
            }
            if changed:
                update["revision"] = revision
                update["updated_at"] = utc_now()
                if self._listener is not None:
                    update["aggregate"] = header.aggregate.model_copy(
                        update={"status": "parsing", "updated_at": utc_now()}
                    )
            new_header = header.model_copy(update=update)
            try:
                if item is None:
                    await self._catalog.create(pk, _set_id(conversation_id), new_header.body())
                else:
                    await self._catalog.replace(pk, _set_id(conversation_id), new_header.body(), if_match=item.etag)
            except (ItemAlreadyExists, ETagMismatch, ItemNotFound):
                continue
            return new_header, planned
        raise StorageUnavailable("the session is too busy; retry")

    async def _store(
        self, principal: Principal, conversation_id: str, planned: _Planned
    ) -> asyncio.Task[ProcessingResult]:
        upload = planned.upload
        assert upload is not None
        member = planned.member
        previous = planned.previous if planned.previous and planned.previous.file_id == member.file_id else None
        now = utc_now()
        record = ContextFile(
            file_id=member.file_id,
            filename=member.filename,
            size_bytes=member.size_bytes,
            content_type=member.mime_type,
            content_hash=member.content_hash,
            status="uploading",
            digest_status="parsing" if self._listener is not None else "stale",
            created_at=previous.created_at if previous else now,
            updated_at=now,
            uploaded_at=member.uploaded_at,
        )
        location = session_location(principal, conversation_id, record)
        # The record first, so the upload shows as "uploading" while a large blob is being written.
        await self._catalog.upsert(location.partition_key, location.item_id, _body(conversation_id, record))
        try:
            await self._blobs.put(
                location.blob_path, upload.data, content_type=member.mime_type, metadata={"sha256": member.content_hash}
            )
        except BaseException:
            failed = record.model_copy(
                update={
                    "status": "failed",
                    "status_reason": "the upload did not complete; retry",
                    "digest_status": "error",
                }
            )
            await self._catalog.upsert(location.partition_key, location.item_id, _body(conversation_id, failed))
            raise
        record = record.model_copy(update={"status": "processing", "updated_at": utc_now()})
        await self._catalog.upsert(location.partition_key, location.item_id, _body(conversation_id, record))
        return self._processor.submit(ProcessingJob(location, member.content_hash, upload.content_type))

    def _session_lock(self, principal: Principal, conversation_id: str) -> asyncio.Lock:
        key = f"{principal.partition_key}/{conversation_id}"
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    # -- reads ---------------------------------------------------------------------------------------------------

    async def processing(
        self, principal: Principal, conversation_id: str
    ) -> list[tuple[ContextFile, asyncio.Task[ProcessingResult]]]:
        """The session's documents still being processed by this process, with their jobs (to await or watch)."""
        found = []
        for record in await self.files(principal, conversation_id):
            job = self._processor.running(session_location(principal, conversation_id, record))
            if job is not None:
                found.append((record, job))
        return found

    async def files(self, principal: Principal, conversation_id: str) -> list[ContextFile]:
        """The conversation's file records, in upload order."""
        items = await self._catalog.query(
            principal.partition_key, id_prefix=_record_prefix(conversation_id), order_by="created_at"
        )
        return [ContextFile.model_validate(item.body) for item in items]

    async def header(self, principal: Principal, conversation_id: str) -> SessionHeader | None:
        """The session's stored header, or ``None`` for a session that never had files."""
        item = await self._catalog.get(principal.partition_key, _set_id(conversation_id))
        return SessionHeader.model_validate(item.body) if item is not None else None

    async def manifest(self, principal: Principal, conversation_id: str) -> ContextSet:
        """The files of the latest revision with their stored statuses.

        Membership and revision come from the header (one item, so they always agree); each member's state
        comes from its record. A member whose record does not hold the member's content yet (its upload is
        being written) is listed from the header as ``uploading``.
        """
        validate_identifier(conversation_id, what="conversation")
        item = await self._catalog.get(principal.partition_key, _set_id(conversation_id))
        records = await self.files(principal, conversation_id)
        if item is None and not records:
            raise NotFound("no such session")
        by_name = {record.filename: record for record in records}
        header = _header_of(item, conversation_id, by_name)
        by_id = {record.file_id: record for record in records}
        files = [_member_file(member, by_id.get(member.file_id)) for member in header.files or ()]
        return ContextSet(
            context_set_id=header.context_set_id,
            session_id=conversation_id,
            revision=header.revision,
            updated_at=header.updated_at,
            files=files,
            aggregate_digest_status=header.aggregate.status,
            aggregate_digest_ref=header.aggregate.ref,
            aggregate_digest_error=header.aggregate.error,
            changes=header.last_change or ChangeSummary(revision=header.revision),
            aggregate=header.aggregate,
        )

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

    async def update_aggregate(
        self,
        principal: Principal,
        conversation_id: str,
        change: Callable[[SessionHeader], AggregateState | None],
    ) -> SessionHeader | None:
        """Set the header's aggregate state to ``change(header)`` (skipped when it returns ``None``), retrying on
        concurrent writes; ``None`` when the session is gone or the change was skipped."""
        pk = principal.partition_key
        for _ in range(_MAX_WRITE_ATTEMPTS):
            item = await self._catalog.get(pk, _set_id(conversation_id))
            if item is None:
                return None
            header = SessionHeader.model_validate(item.body)
            aggregate = change(header)
            if aggregate is None:
                return None
            updated = header.model_copy(update={"aggregate": aggregate})
            try:
                await self._catalog.replace(pk, _set_id(conversation_id), updated.body(), if_match=item.etag)
            except ETagMismatch:
                continue
            except ItemNotFound:
                return None
            return updated
        raise StorageUnavailable("the session is too busy; retry")

    async def _records_by_name(self, principal: Principal, conversation_id: str) -> dict[str, ContextFile]:
        return {record.filename: record for record in await self.files(principal, conversation_id)}


def _plan_upload(upload: Upload, member: Member | None, records: dict[str, ContextFile]) -> _Planned:
    digest = upload.sha256
    record = records.get(upload.filename)
    if member is not None and member.content_hash == digest:
        # Unchanged content is stored again only when its earlier upload never completed or failed (the failure
        # may have been transient); the revision stays.
        redo = record is None or record.content_hash != digest or record.status == "failed"
        return _Planned(member=member, diff="unchanged", upload=upload if redo else None, previous=record)
    now = utc_now()
    fresh = Member(
        file_id=member.file_id if member else f"doc-{uuid.uuid4().hex}",
        filename=upload.filename,
        content_hash=digest,
        size_bytes=len(upload.data),
        mime_type=upload.content_type or "application/octet-stream",
        uploaded_at=now,
    )
    return _Planned(member=fresh, diff="new" if member is None else "changed", upload=upload, previous=record)


def _needs_digest(planned: _Planned) -> bool:
    """An unchanged file uploaded again while its digest is missing or failed: the upload retries the digest."""
    record = planned.previous
    return planned.diff != "unchanged" or record is None or record.digest_status in ("none", "stale", "error")


def _removal(file_id: str) -> Planner:
    def plan(members: list[Member], records: dict[str, ContextFile]) -> list[_Planned]:
        member = next((m for m in members if m.file_id == file_id), None)
        if member is None:
            raise NotFound("no such file in this session", code="file_not_found")
        return [_Planned(member=member, diff="deleted", upload=None, previous=records.get(member.filename))]

    return plan


def _apply(members: list[Member], planned: list[_Planned]) -> list[Member]:
    """The membership after ``planned``: deleted files leave, changed ones are updated in place, new ones append."""
    result = list(members)
    positions = {member.file_id: index for index, member in enumerate(result)}
    removed: set[str] = set()
    for item in planned:
        if item.diff == "deleted":
            removed.add(item.member.file_id)
        elif item.member.file_id in positions:
            result[positions[item.member.file_id]] = item.member
        else:
            positions[item.member.file_id] = len(result)
            result.append(item.member)
    return [member for member in result if member.file_id not in removed]


def _header_of(item: StoredItem | None, conversation_id: str, records: dict[str, ContextFile]) -> SessionHeader:
    """The stored header, or a fresh one; membership derived from the records for headers that predate it."""
    header = (
        SessionHeader.model_validate(item.body) if item is not None else SessionHeader(conversation_id=conversation_id)
    )
    if header.files is None:
        ordered = sorted(records.values(), key=lambda record: (record.created_at, record.file_id))
        header.files = [_member_of(record) for record in ordered]
    return header


def _member_of(record: ContextFile) -> Member:
    return Member(
        file_id=record.file_id,
        filename=record.filename,
        content_hash=record.content_hash,
        size_bytes=record.size_bytes,
        mime_type=record.content_type,
        uploaded_at=record.uploaded_at or record.updated_at,
    )


def _member_file(member: Member, record: ContextFile | None) -> ContextFile:
    """A member as listed: its record when the record holds the member's content, else the upload in flight."""
    if record is not None and record.content_hash == member.content_hash:
        if record.uploaded_at is None:
            return record.model_copy(update={"uploaded_at": member.uploaded_at})
        return record
    return ContextFile(
        file_id=member.file_id,
        filename=member.filename,
        size_bytes=member.size_bytes,
        content_type=member.mime_type,
        content_hash=member.content_hash,
        status="uploading",
        digest_status="parsing",
        created_at=record.created_at if record else member.uploaded_at,
        updated_at=member.uploaded_at,
        uploaded_at=member.uploaded_at,
    )


def _body(conversation_id: str, record: ContextFile) -> dict[str, Any]:
    return {"kind": "session_file", "conversation_id": conversation_id, **record.model_dump(mode="json")}
