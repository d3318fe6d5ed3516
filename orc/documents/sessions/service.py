"""The service behind a conversation's files: it commits each mutation to the session's header and stores the
blobs and records that follow.

A file's ``file_id`` is the catalog's stable document id: uploading a file with the same name again keeps the
id and reports ``changed`` or ``unchanged`` by content hash. Every mutation that changes something commits a new
revision and the new membership in one conditional write of the header (optionally only from an expected
revision: ``If-Match``); the records, blobs and processing jobs follow. What a mutation does is decided by
:mod:`orc.documents.sessions.planning` without storage; this module reads, writes and retries. Uploads go
through the same pipeline as context documents (:mod:`orc.documents.intake.processing`): a record moves
``uploading → processing → ready | failed`` and the text is searchable by the document tools once ``ready``.
A :class:`ContextListener` (the digest pipeline) hears about every change and refreshes the digests in the
background.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from cachetools import TTLCache

from orc.admission import UNLIMITED, Admission
from orc.clock import utc_now
from orc.documents.intake.processing import DocumentProcessor, ProcessingJob, ProcessingResult
from orc.documents.intake.uploads import (
    Upload,
    check_uploads,
    screen_uploads,
    upload_wait_seconds,
    uploading,
)
from orc.documents.sessions import planning
from orc.documents.sessions.locations import header_id, record_body, record_prefix, session_location
from orc.documents.sessions.models import (
    MAX_FILES_PER_SESSION,
    AggregateState,
    ContextFile,
    ContextSet,
    FileChange,
    Mutation,
    SessionHeader,
    spec_digest_status,
)
from orc.documents.sessions.planning import PlannedFile, Planner
from orc.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    OrcError,
)
from orc.names import folder_conflicts, validate_identifier
from orc.principal import Principal
from orc.search.text_store import TextStore
from orc.storage.ports import BlobStore, DocumentCollection, StoredItem
from orc.storage.updates import update_item

_MAX_WRITE_ATTEMPTS = 50

__all__ = ["ContextListener", "SessionFiles"]


RECENT_FILES_SECONDS = 2.0
"""How long the records a read just returned also serve :meth:`SessionFiles.recent_files` (a turn's document reads
after its file check)."""
MAX_RECENT_SESSIONS = 1_000


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
        wait_seconds: float | None = None,
        max_files: int = MAX_FILES_PER_SESSION,
        admission: Admission = UNLIMITED,
    ) -> None:
        self._catalog = catalog
        self._admission = admission
        self._blobs = blobs
        self._max_upload_bytes = max_upload_bytes
        self._processor = processor
        self._texts = texts
        self._wait_seconds = wait_seconds
        self._max_files = max_files
        self._listener: ContextListener | None = None
        self._recent: TTLCache[tuple[str, str], tuple[ContextFile, ...]] = TTLCache(
            maxsize=MAX_RECENT_SESSIONS, ttl=RECENT_FILES_SECONDS
        )
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

    @staticmethod
    def _check_names(uploads: Sequence[Upload]) -> None:
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
        self._check_names(uploads)
        # A file orc cannot take is refused on its own and listed in the response; the others go on.
        accepted, refused = screen_uploads(uploads, self._max_upload_bytes)
        plan = planning.plan_uploads(accepted)
        names = [upload.filename for upload in accepted]
        async with uploading(self._admission, principal, accepted):
            mutation = await self._mutate(
                principal, conversation_id, plan, if_match=if_match, wait_seconds=wait_seconds, new_names=names
            )
        return mutation.model_copy(update={"refused": refused})

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
        plan = planning.plan_replacement(file_id, upload)
        async with uploading(self._admission, principal, [upload]):
            return await self._mutate(principal, conversation_id, plan, if_match=if_match, wait_seconds=wait_seconds)

    async def remove(
        self, principal: Principal, conversation_id: str, file_id: str, *, if_match: int | None = None
    ) -> Mutation:
        """Delete one file (blob, text and record). :class:`NotFound` (``file_not_found``) when it is not in the set."""
        validate_identifier(conversation_id, what="conversation")
        validate_identifier(file_id, what="file")
        async with self._session_lock(principal, conversation_id):
            records = await self._records_by_name(principal, conversation_id)
            header, planned = await self._commit(
                principal, conversation_id, records, planning.plan_removal(file_id), if_match=if_match
            )
            removed = next(item for item in planned if item.diff == "deleted")
            record = records.get(removed.member.filename)
            gone = record if record is not None and record.file_id == file_id else None
            if gone is not None:
                await self._delete(principal, conversation_id, gone)
        if self._listener is not None:
            self._listener.files_changed(principal, conversation_id, [gone] if gone else [])
        change = FileChange(
            file_id=file_id,
            filename=removed.member.filename,
            status=gone.status if gone else "ready",
            digest_status=spec_digest_status(gone.digest_status) if gone else "stale",
            diff="deleted",
        )
        return Mutation(revision=header.revision, files=[change])

    async def remove_all(self, principal: Principal, conversation_id: str) -> None:
        """Delete every file of the conversation and its header (used when a session is deleted)."""
        validate_identifier(conversation_id, what="conversation")
        async with self._session_lock(principal, conversation_id):
            records = await self.files(principal, conversation_id)
            for record in records:
                await self._delete(principal, conversation_id, record)
            await self._catalog.delete(principal.partition_key, header_id(conversation_id))
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
        new_names: Sequence[str] = (),
    ) -> Mutation:
        jobs: list[asyncio.Task[ProcessingResult]] = []
        async with self._session_lock(principal, conversation_id):
            records = await self._records_by_name(principal, conversation_id)
            refuse_folder_conflicts(new_names, records.keys())
            header, planned = await self._commit(principal, conversation_id, records, plan, if_match=if_match)
            # With auto-parse off no digest is coming: the records say so (``stale``), as the manifest will.
            digests = self._listener is not None and header.auto_parse
            for item in planned:
                if item.upload is not None:
                    jobs.append(await self._store(principal, conversation_id, item, digests=digests))
        if self._listener is not None and (jobs or any(planning.needs_digest(item) for item in planned)):
            self._listener.files_changed(principal, conversation_id, planning.replaced_records(planned))
        if wait_seconds is None:
            wait_seconds = upload_wait_seconds() if self._wait_seconds is None else self._wait_seconds
        await self._processor.wait(jobs, wait_seconds)
        current = (
            {record.file_id: record for record in await self.files(principal, conversation_id)}
            if jobs
            else {record.file_id: record for record in records.values()}
        )
        return Mutation(revision=header.revision, files=planning.file_changes(planned, current))

    async def _commit(
        self,
        principal: Principal,
        conversation_id: str,
        records: dict[str, ContextFile],
        plan: Planner,
        *,
        if_match: int | None,
    ) -> tuple[SessionHeader, list[PlannedFile]]:
        """Write the header :func:`~planning.plan_commit` plans, conditionally on the one read (optimistic
        concurrency: a concurrent writer makes it read and plan again)."""
        committed: tuple[SessionHeader, list[PlannedFile]] | None = None

        def planned(item: StoredItem | None) -> dict[str, Any]:
            nonlocal committed
            committed = planning.plan_commit(
                planning.header_of(_stored_header(item), conversation_id, records),
                records,
                plan,
                now=utc_now(),
                if_match=if_match,
                max_files=self._max_files,
                digests=self._listener is not None,
            )
            return committed[0].body()

        await self._update_header(principal, conversation_id, planned)
        assert committed is not None
        return committed

    async def _store(
        self, principal: Principal, conversation_id: str, planned: PlannedFile, *, digests: bool
    ) -> asyncio.Task[ProcessingResult]:
        """Write the record, then the blob, then submit the processing job."""
        upload = planned.upload
        assert upload is not None
        record = planning.new_record(planned, now=utc_now(), digests=digests)
        location = session_location(principal, conversation_id, record)
        job = ProcessingJob(location, record.content_hash, upload.content_type)
        # Leased first: a crash from here on leaves work the next sweep finds (orc.documents.intake.recovery).
        await self._processor.hold(job)
        # The record first, so the upload shows as "uploading" while a large blob is being written.
        await self._catalog.upsert(location.partition_key, location.item_id, record_body(conversation_id, record))
        try:
            await self._blobs.put(
                location.blob_path,
                upload.data,
                content_type=record.content_type,
                metadata={"sha256": record.content_hash},
            )
        except BaseException:
            failed = record.model_copy(
                update={
                    "status": "failed",
                    "status_reason": "the upload did not complete; retry",
                    "digest_status": "error",
                }
            )
            # The lease lets a sweep settle the record later; an outage here must not replace the exception in flight.
            with contextlib.suppress(OrcError):
                await self._catalog.upsert(
                    location.partition_key, location.item_id, record_body(conversation_id, failed)
                )
            raise
        record = record.model_copy(update={"status": "processing", "updated_at": utc_now()})
        await self._catalog.upsert(location.partition_key, location.item_id, record_body(conversation_id, record))
        return self._processor.submit(job)

    async def _delete(self, principal: Principal, conversation_id: str, record: ContextFile) -> None:
        """Delete a file's blob, stored text and record."""
        location = session_location(principal, conversation_id, record)
        await self._blobs.delete(location.blob_path)
        await self._texts.delete(location.partition_key, record.file_id)
        await self._catalog.delete(principal.partition_key, location.item_id)
        await self._processor.unindex(principal.organization, record.file_id)

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
            principal.partition_key, id_prefix=record_prefix(conversation_id), order_by="created_at"
        )
        records = [ContextFile.model_validate(item.body) for item in items]
        self._recent[(principal.partition_key, conversation_id)] = tuple(records)  # a caller may reorder its list
        return records

    async def recent_files(self, principal: Principal, conversation_id: str) -> list[ContextFile]:
        """The records as read in the last :data:`RECENT_FILES_SECONDS` (a turn's file check), else read now.

        Only for a reader that checks each record against what its blob holds now (the processed texts a turn
        reads): a record read a moment ago may miss a change, which such a reader sees and works around by
        extracting the document itself, so the turn pays for one read of its records instead of two.
        """
        found = self._recent.get((principal.partition_key, conversation_id))
        if found is not None:
            return list(found)
        return await self.files(principal, conversation_id)

    async def sessions(self, principal: Principal, *, limit: int | None = None) -> list[SessionHeader]:
        """The headers of the sessions of ``principal`` that have (or had) files, most recently changed first: all
        of them, or the ``limit`` most recent."""
        items = await self._catalog.query(
            principal.partition_key, id_prefix=header_id(""), order_by="updated_at", descending=True, limit=limit
        )
        return [SessionHeader.model_validate(item.body) for item in items]

    async def header(self, principal: Principal, conversation_id: str) -> SessionHeader | None:
        """The session's stored header, or ``None`` for a session that never had files."""
        return _stored_header(await self._catalog.get(principal.partition_key, header_id(conversation_id)))

    async def manifest(self, principal: Principal, conversation_id: str) -> ContextSet:
        """The files of the latest revision with their stored statuses.

        Membership and revision come from the header (one item, so they always agree); each member's state
        comes from its record. A member whose record does not hold the member's content yet (its upload is
        being written) is listed from the header as ``uploading``.
        """
        validate_identifier(conversation_id, what="conversation")
        stored = await self.header(principal, conversation_id)
        records = await self.files(principal, conversation_id)
        if stored is None and not records:
            raise NotFound("no such session", code="session_not_found")
        header = planning.header_of(stored, conversation_id, {record.filename: record for record in records})
        return planning.context_set(header, records)

    @staticmethod
    def empty_manifest(conversation_id: str) -> ContextSet:
        """The set of a session that has no files yet: revision 0, nothing in it, nothing parsing."""
        validate_identifier(conversation_id, what="conversation")
        return planning.context_set(planning.header_of(None, conversation_id, {}), [])

    async def require_names(
        self, principal: Principal, conversation_id: str, blob_names: Sequence[str]
    ) -> list[ContextFile]:
        """The records of the named files, in order; :class:`NotFound` unless every name is a file of this
        conversation."""
        if not blob_names:
            return []
        known = {record.filename: record for record in await self.files(principal, conversation_id)}
        missing = [name for name in blob_names if name not in known]
        if missing:
            raise NotFound(
                f"not a file of this conversation: {', '.join(repr(name) for name in missing)}; "
                f"upload it to /api/sessions/{conversation_id}/context/files first",
                code="document_not_found",
            )
        return [known[name] for name in blob_names]

    # -- digest state ----------------------------------------------------------------------------------------------

    async def update_aggregate(
        self,
        principal: Principal,
        conversation_id: str,
        change: Callable[[SessionHeader], AggregateState | None],
    ) -> SessionHeader | None:
        """Set the header's aggregate state to ``change(header)`` (skipped when it returns ``None``), retrying on
        concurrent writes; ``None`` when the session is gone or the change was skipped."""
        updated: SessionHeader | None = None

        def changed(item: StoredItem | None) -> dict[str, Any] | None:
            nonlocal updated
            header = updated = _stored_header(item)
            aggregate = change(header) if header is not None else None
            if header is None or aggregate is None:
                return None
            updated = header.model_copy(update={"aggregate": aggregate})
            return updated.body()

        return updated if await self._update_header(principal, conversation_id, changed) is not None else None

    async def set_auto_parse(self, principal: Principal, conversation_id: str, on: bool) -> None:
        """Turn the session's "auto-parse on change" on or off (a session without files yet gets its header now, so
        the choice holds for its first upload)."""
        validate_identifier(conversation_id, what="conversation")

        def switched(item: StoredItem | None) -> dict[str, Any] | None:
            header = _stored_header(item) or planning.header_of(None, conversation_id, {})
            if header.auto_parse == on and item is not None:
                return None
            return header.model_copy(update={"auto_parse": on}).body()

        await self._update_header(principal, conversation_id, switched)

    async def _update_header(
        self,
        principal: Principal,
        conversation_id: str,
        change: Callable[[StoredItem | None], dict[str, Any] | None],
    ) -> StoredItem | None:
        pk, busy = principal.partition_key, "the session is too busy; retry"
        return await update_item(
            self._catalog, pk, header_id(conversation_id), change, busy=busy, attempts=_MAX_WRITE_ATTEMPTS
        )

    async def _records_by_name(self, principal: Principal, conversation_id: str) -> dict[str, ContextFile]:
        return {record.filename: record for record in await self.files(principal, conversation_id)}


def _stored_header(item: StoredItem | None) -> SessionHeader | None:
    return SessionHeader.model_validate(item.body) if item is not None else None


def refuse_folder_conflicts(new: Sequence[str], existing: Iterable[str]) -> None:
    """409 ``name_conflict`` before anything is written when a name would be both a file and a folder."""
    conflicting = folder_conflicts(new, existing)
    if conflicting:
        raise Conflict(
            f"{conflicting[0]!r} would be both a file and a folder (like 'dir' beside 'dir/f.md'); rename it",
            code="name_conflict",
        )
