"""Background processing of uploaded documents: extract → spans → hashes → stored text → search index → ``ready``.

The search index is written before the record says ``ready``, so the next search after an upload or a replace — in
any process — finds the new version; a deleted document leaves the index with its record.

Every upload (session or context document) stores its blob and a catalog record in ``processing`` state and
submits a job here. Jobs run as asyncio tasks, at most ``max_concurrency`` at a time, taken in turn by
organization (:class:`~orc.documents.parsing.fair_turns.FairTurns`), so one organization's backlog never holds another's
documents behind it. Parsing goes through the extraction pool (limits, memory cap, deadline); chunking, hashing
and tokenizing run in a worker thread, so the event loop keeps serving requests while a 200-page PDF is parsed.
A job that fails marks only its own document ``failed`` with a reason a user can act on; a job whose document
was replaced or deleted meanwhile steps aside (``superseded``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import logging
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from orc.clock import utc_now
from orc.documents.parsing.extraction_pool import ExtractionPool
from orc.documents.parsing.fair_turns import FairTurns, organization_of
from orc.documents.records import estimate_tokens, search_scope
from orc.errors import ExtractionError, ItemNotFound, OrcError, StorageUnavailable, UnsupportedMediaType
from orc.periodic import every
from orc.search.port import ScopeFields
from orc.search.text_store import DocumentText, TextStore, VectorLocation, extractor_pages, process_extracted
from orc.storage.ports import BlobStore, DocumentCollection, StoredItem
from orc.storage.updates import update_item

if TYPE_CHECKING:  # numpy and the embedding clients load only where vectors are made
    from orc.search.vectors import Matrix, SpanVectors

logger = logging.getLogger(__name__)

GENERIC_FAILURE = "the document could not be processed; upload it again, or another copy of it"


@dataclass(frozen=True, slots=True)
class DocumentLocation:
    """Where a document's record, text and bytes are: its catalog item and its blob."""

    partition_key: str
    item_id: str
    document_id: str
    blob_path: str
    filename: str


@dataclass(frozen=True, slots=True)
class ProcessingJob:
    """Process the content of ``location`` whose sha256 is ``content_hash``."""

    location: DocumentLocation
    content_hash: str
    content_type: str | None = None
    claim: str | None = None
    """Set by a queue worker: the record's ``processing_claim`` must still name it when the result is written."""

    def as_json(self) -> dict[str, Any]:
        """The job as JSON fields (a queue message's, a lease's); the claim is not part of it."""
        return {
            **dataclasses.asdict(self.location),
            "content_hash": self.content_hash,
            "content_type": self.content_type,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> ProcessingJob:
        """The job :meth:`as_json` wrote; ``KeyError`` when a field is missing."""
        location = DocumentLocation(
            **{field.name: str(body[field.name]) for field in dataclasses.fields(DocumentLocation)}
        )
        content_type = body.get("content_type")
        return cls(location, str(body["content_hash"]), str(content_type) if content_type else None)


Outcome = Literal["ready", "failed", "superseded"]


@dataclass(frozen=True, slots=True)
class ProcessingResult:
    """How a job ended: ``ready``, ``failed`` (with the reason) or ``superseded`` (replaced or deleted)."""

    document_id: str
    outcome: Outcome
    reason: str | None = None


class DocumentIndex(Protocol):
    """Where processed documents are made searchable (:class:`orc.search.retriever.Retriever`)."""

    async def index(
        self, text: DocumentText, *, document_id: str, scope: ScopeFields, vectors: Matrix | None = None
    ) -> None: ...

    async def remove(self, organization: str, document_id: str) -> None: ...


class JobLeases(Protocol):
    """What the processor needs of the leases that let interrupted work be found
    (:mod:`orc.documents.intake.leases`)."""

    lease_seconds: float

    async def hold(self, job: ProcessingJob) -> None: ...

    async def renew(self, job: ProcessingJob) -> None: ...

    async def release(self, job: ProcessingJob) -> None: ...


class DocumentProcessor:
    """Runs processing jobs in the background with bounded concurrency; close it to cancel what is left."""

    def __init__(
        self,
        catalog: DocumentCollection,
        blobs: BlobStore,
        texts: TextStore,
        index: DocumentIndex,
        *,
        max_concurrency: int = 2,
        max_document_bytes: int,
        dispatch: Callable[[ProcessingJob], Coroutine[Any, Any, None]] | None = None,
        leases: JobLeases | None = None,
        extraction_pool: ExtractionPool,
        vectors: SpanVectors | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self._catalog = catalog
        self._blobs = blobs
        self._texts = texts
        self._index = index
        # One spare slot: while one organization's documents fill the others, another's is processed at once.
        self._slots = FairTurns(max_concurrency, spare=1)
        self._max_document_bytes = max_document_bytes
        self._running: dict[tuple[str, str], tuple[str, asyncio.Task[ProcessingResult]]] = {}
        # Every job not yet done, replaced ones included: a job whose document was uploaded again leaves
        # _running but works on until it finds itself superseded, and closing must stop it all the same.
        self._tasks: set[asyncio.Task[ProcessingResult]] = set()
        self._closed = False
        # With a job queue, submit() hands the job to it and follows the record until a worker settles it.
        self._dispatch = dispatch
        self._enqueued: dict[asyncio.Task[ProcessingResult], asyncio.Task[None]] = {}
        # Uploads and in-process jobs hold a lease on their document, so work a crash interrupts is resumed.
        self._leases = leases
        # The one place documents are parsed, under the configured limits (the composition root's pool).
        self._pool = extraction_pool
        # Span vectors for hybrid retrieval, when embeddings are configured (orc.search.vectors).
        self._vectors = vectors

    async def hold(self, job: ProcessingJob) -> None:
        """Lease ``job``'s document before its upload writes anything (a no-op without leases)."""
        if self._leases is not None:
            await self._leases.hold(job)

    def submit(self, job: ProcessingJob) -> asyncio.Task[ProcessingResult]:
        """Start processing (or join the job already processing the same content of the same document)."""
        if self._closed:
            raise RuntimeError("the document processor is closed")
        key = (job.location.partition_key, job.location.item_id)
        current = self._running.get(key)
        if current is not None and current[0] == job.content_hash and not current[1].done():
            return current[1]
        if self._dispatch is None:
            work = self._leased(job)
        else:
            enqueued = asyncio.create_task(self._dispatch(job), name=f"enqueue-{job.location.document_id}")
            work = self._dispatched(job, enqueued)
        task = asyncio.create_task(work, name=f"process-{job.location.document_id}")
        self._running[key] = (job.content_hash, task)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

        def forget(done: asyncio.Task[ProcessingResult]) -> None:
            if self._running.get(key, (None, None))[1] is done:
                del self._running[key]

        task.add_done_callback(forget)
        if self._dispatch is not None:
            self._enqueued[task] = enqueued
            task.add_done_callback(lambda done: self._enqueued.pop(done, None))
        return task

    def running(self, location: DocumentLocation) -> asyncio.Task[ProcessingResult] | None:
        """The job processing ``location`` in this process, if there is one."""
        current = self._running.get((location.partition_key, location.item_id))
        return current[1] if current is not None and not current[1].done() else None

    async def wait(self, tasks: Iterable[asyncio.Task[ProcessingResult]], seconds: float) -> None:
        """Wait up to ``seconds`` for ``tasks``; they keep running in the background after that.

        Queued jobs are at least in the queue on return (even with ``seconds=0``): an upload is never answered
        before its job is durable.
        """
        tasks = list(tasks)
        enqueued = [self._enqueued[task] for task in tasks if task in self._enqueued]
        if enqueued:
            await asyncio.gather(*enqueued)
        pending = [task for task in tasks if not task.done()]
        if pending and seconds > 0:
            # asyncio.wait never cancels what it waits for: a request that gives up leaves the jobs running.
            await asyncio.wait(pending, timeout=seconds)

    async def aclose(self) -> None:
        """Cancel the jobs still running (superseded ones too) and wait for them to stop."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _dispatched(self, job: ProcessingJob, enqueued: asyncio.Task[None]) -> ProcessingResult:
        await enqueued
        if self._leases is not None:
            await self._leases.release(job)  # the queue redelivers it now if a worker dies
        return await follow_record(self._catalog, job)

    async def _leased(self, job: ProcessingJob) -> ProcessingResult:
        """:meth:`process` under a lease this process renews (with leases): a crash leaves the lease to lapse and
        the job to another process."""
        if self._leases is None:
            return await self.process(job)
        leases = self._leases
        heartbeat = asyncio.create_task(self._renew(leases, job), name=f"lease-{job.location.document_id}")
        try:
            result = await self.process(job)
        finally:
            # Cancelled (shutdown) or not, renewing stops; the lease is dropped only once the record is settled,
            # so a job a shutdown interrupts is picked up again when its lease lapses.
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        with contextlib.suppress(Exception):  # a lease left behind only costs a sweep a record read
            await leases.release(job)
        return result

    @staticmethod
    async def _renew(leases: JobLeases, job: ProcessingJob) -> None:
        # Three renewals a lease: a storage hiccup leaves two more chances before the lease lapses.
        await every(
            leases.lease_seconds / 3,
            lambda: leases.renew(job),
            failure="renewing a processing lease failed",
            log=logger,
            at_once=True,
        )

    async def process(self, job: ProcessingJob) -> ProcessingResult:
        """Process ``job`` now, in this task (a queue worker's entry); bounded by the same concurrency slots."""
        async with self._slots.turn(organization_of(job.location.partition_key)):
            try:
                return await self._process(job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                # Storage failures while reading or writing: the document stays retryable via documents.analyze.
                logger.warning("processing %s failed: %s", job.location.document_id, type(exc).__name__)
                logger.debug("processing failure details", exc_info=True)
                return await self.fail(job, GENERIC_FAILURE)

    async def _process(self, job: ProcessingJob) -> ProcessingResult:
        location = job.location
        try:
            data, info = await self._blobs.get(location.blob_path)
        except ItemNotFound:
            return ProcessingResult(location.document_id, "superseded")
        if len(data) > self._max_document_bytes:
            return await self.fail(
                job, f"{location.filename!r} is larger than the {self._max_document_bytes} byte limit"
            )
        if hashlib.sha256(data).hexdigest() != job.content_hash:
            return ProcessingResult(location.document_id, "superseded")
        content_type = job.content_type or info.content_type
        try:
            extracted = await self._pool.extract(
                data, location.filename, content_type, organization=organization_of(location.partition_key)
            )
            text = await asyncio.to_thread(process_extracted, extracted)
        except (ExtractionError, UnsupportedMediaType) as exc:
            return await self.fail(job, exc.message)
        except OrcError as exc:
            return await self.fail(job, exc.message if exc.status < 500 else GENERIC_FAILURE)
        del data
        await self._texts.save(location.partition_key, location.document_id, job.content_hash, text)
        vectors = await self._embed(job, text) if self._vectors is not None else None
        scope = await self._scope(job)
        if scope is None:  # replaced or deleted meanwhile: the newer job (or the delete) settles the index
            await self._texts.discard(location.partition_key, location.document_id, job.content_hash)
            return ProcessingResult(location.document_id, "superseded")
        try:
            await self._index.index(text, document_id=location.document_id, scope=scope, vectors=vectors)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The stored text is the truth: the first search that needs the document indexes it from there.
            logger.warning("indexing %s failed: %s", location.document_id, type(exc).__name__)
        fields: dict[str, Any] = {
            "status": "ready",
            "status_reason": None,
            "media_type": text.media_type,
            "extracted_text_hash": text.extracted_text_hash,
            "spans_hash": text.spans_hash,
            "chunking_version": text.chunking_version,
            "span_count": len(text.spans),
            "page_count": len(text.pages),
            "extractors": extractor_pages(text.extractors) or None,
            "text_chars": text.total_chars,
            "token_estimate": estimate_tokens(text.total_chars),
            "processed_at": utc_now(),
        }
        if not await self._mark(job, fields):
            await self._texts.discard(location.partition_key, location.document_id, job.content_hash)
            if await self._catalog.get(location.partition_key, location.item_id) is None:
                await self.unindex(scope.organization, location.document_id)
            return ProcessingResult(location.document_id, "superseded")
        # The record now points at this version; older versions of the document are garbage.
        await self._texts.delete(location.partition_key, location.document_id, keep_content_hash=job.content_hash)
        return ProcessingResult(location.document_id, "ready")

    async def _embed(self, job: ProcessingJob, text: DocumentText) -> Matrix | None:
        """Make and store the span vectors; a failure leaves them to be made lazily, the document stays usable."""
        assert self._vectors is not None
        location = job.location
        where = VectorLocation(location.partition_key, location.document_id, job.content_hash)
        try:
            return await self._vectors.embed_document(text, where)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.warning("embedding %s failed: %s", location.document_id, type(exc).__name__)
            return None

    async def _scope(self, job: ProcessingJob) -> ScopeFields | None:
        """Where the document sits (its record's context or session); None when the record no longer describes
        the processed content."""
        location = job.location
        item = await self._catalog.get(location.partition_key, location.item_id)
        if item is None or item.body.get("content_hash") != job.content_hash:
            return None
        return search_scope(location.partition_key, item.body)

    async def unindex(self, organization: str, document_id: str) -> None:
        """Take a deleted document out of the search index. A failure is logged, not raised: an entry left behind
        has no catalog record, so no search ever returns it."""
        try:
            await self._index.remove(organization, document_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.warning("removing %s from the search index failed: %s", document_id, type(exc).__name__)

    async def resume(self, job: ProcessingJob) -> asyncio.Task[ProcessingResult] | None:
        """Process again a document whose processing was interrupted (its record is moved on from ``uploading``);
        None when the record no longer describes ``job``'s content."""
        if not await self._mark(job, {"status": "processing"}):
            return None
        return self.submit(job)

    async def fail(self, job: ProcessingJob, reason: str) -> ProcessingResult:
        """Settle ``job``'s document as ``failed`` with ``reason`` (if its record still describes that content)."""
        fields = {"status": "failed", "status_reason": reason, "processed_at": utc_now()}
        if not await self._mark(job, fields):
            return ProcessingResult(job.location.document_id, "superseded")
        return ProcessingResult(job.location.document_id, "failed", reason)

    async def _mark(self, job: ProcessingJob, fields: dict[str, Any]) -> bool:
        """Write ``fields`` into the record if it still describes the processed content; False when it does not."""
        location = job.location

        def marked(item: StoredItem | None) -> dict[str, Any] | None:
            if item is None or item.body.get("content_hash") != job.content_hash:
                return None
            if job.claim is not None and (item.body.get("processing_claim") or {}).get("by") != job.claim:
                return None  # another worker took the job over: its result is the one that counts
            return {**item.body, **fields, "updated_at": utc_now()}

        try:
            stored = await update_item(self._catalog, location.partition_key, location.item_id, marked, busy="busy")
        except StorageUnavailable:
            return False
        return stored is not None


FOLLOW_SECONDS = 900.0
"""How long an uploading process follows a queued job's record before leaving it to documents.analyze."""


async def follow_record(catalog: DocumentCollection, job: ProcessingJob) -> ProcessingResult:
    """Poll the record until a worker settles ``job`` (ready, failed, replaced or deleted), with backoff."""
    location = job.location
    loop = asyncio.get_running_loop()
    deadline, pause = loop.time() + FOLLOW_SECONDS, 0.05
    while loop.time() < deadline:
        item = await catalog.get(location.partition_key, location.item_id)
        if item is None or item.body.get("content_hash") != job.content_hash:
            return ProcessingResult(location.document_id, "superseded")
        status = item.body.get("status")
        if status in ("ready", "failed"):
            return ProcessingResult(location.document_id, status, item.body.get("status_reason"))
        await asyncio.sleep(pause)  # polling interval: the record is the only signal that crosses processes
        pause = min(pause * 2, 5.0)
    return ProcessingResult(location.document_id, "superseded")
