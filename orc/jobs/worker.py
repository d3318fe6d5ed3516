"""The queue worker: takes document processing and digest jobs off the queues and runs them, idempotently.

Delivery is at least once (a crashed or slow worker's job is delivered again, a job can be enqueued twice), so
every handling starts from the catalog record, not from the message:

- the record no longer has the job's content hash, or is already ``ready``/``failed`` for it → acknowledged
  without work;
- otherwise the worker **claims** the record with a conditional (ETag) write of ``processing_claim``
  (a fresh id and a lease). Two workers racing on one record are told apart by that write: one wins, the other
  sees a live claim and hands the delivery back for later. The result is written only while the record still
  names the claim (``ProcessingJob.claim``), so a worker whose lease lapsed and was taken over never completes;
- a delivery seen more than ``max_deliveries`` times is poison: its document ends ``failed`` with a reason.

Deliveries are received a few at a time beyond what runs (:data:`LOOKAHEAD`) and run in turn by organization
(:class:`~orc.documents.parsing.fair_turns.FairTurns`): a queue is first in, first out, so without the turns one
organization's hundred uploads would hold every other organization's documents behind them.

The same :class:`JobWorker` serves ``orc worker`` (:meth:`run` polls the queues) and the queue-triggered
functions of ``function_app.py`` (:meth:`handle`; the Functions host deletes or redelivers the message).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from orc.clock import utc_now
from orc.digests.sessions import SessionDigests
from orc.documents.intake.processing import DocumentProcessor, ProcessingJob
from orc.documents.parsing.fair_turns import FairTurns, organization_of
from orc.errors import InvalidInput, JobBusy, StorageUnavailable
from orc.jobs.messages import JobKind, digest_message, processing_job
from orc.principal import Principal
from orc.storage.ports import DocumentCollection, StoredItem
from orc.storage.queues import JobQueue, ReceivedJob, decode_job
from orc.storage.updates import update_item

logger = logging.getLogger(__name__)

_CLAIM_ATTEMPTS = 10
_SETTLED = ("ready", "failed")
LOOKAHEAD = 4
"""Deliveries held per running job, waiting for their organization's turn (the queue's order is not the turns')."""

Observer = Callable[[str, str], None]
"""Called with (document or session id, outcome) after each handling; tests and benchmarks count with it."""


class JobWorker:
    """Consumes ``orc-documents`` (processing) and ``orc-digests`` (session digests) jobs."""

    def __init__(
        self,
        catalog: DocumentCollection,
        processor: DocumentProcessor,
        digests: SessionDigests,
        documents_queue: JobQueue,
        digests_queue: JobQueue,
        *,
        visibility_seconds: float,
        max_deliveries: int,
    ) -> None:
        self._catalog = catalog
        self._processor = processor
        self._digests = digests
        self.documents_queue = documents_queue
        self.digests_queue = digests_queue
        self._visibility = visibility_seconds
        self._max_deliveries = max_deliveries
        self.observer: Observer | None = None
        self.outcomes: Counter[str] = Counter()

    async def handle_message(self, kind: JobKind, text: bytes | str, dequeue_count: int) -> str:
        """:meth:`handle` for a raw queue message (the queue-triggered functions); malformed ones are dropped."""
        try:
            return await self.handle(kind, decode_job(text), dequeue_count)
        except InvalidInput:
            logger.warning("dropping a malformed %s job", kind)
            return "malformed"

    # -- one delivery ---------------------------------------------------------------------------------------------

    async def handle(self, kind: JobKind, body: dict[str, Any], dequeue_count: int) -> str:
        """Handle one delivery; the outcome says what happened. :class:`JobBusy` when another worker holds it."""
        if kind == "digest" or body.get("kind") == "digest":
            outcome = await self._digest(body)
            key = str(body.get("conversation_id"))
        else:
            job = processing_job(body)
            key = job.location.document_id
            outcome = await self._process(job, dequeue_count)
        self.outcomes[outcome] += 1
        logger.info("job %s %s: %s", kind, key, outcome)  # ids only: no names, no text
        if self.observer is not None:
            self.observer(key, outcome)
        if outcome == "busy":
            raise JobBusy("another worker is processing this document; the job is retried later")
        return outcome

    async def _process(self, job: ProcessingJob, dequeue_count: int) -> str:
        if dequeue_count > self._max_deliveries:
            await self._poison(job, dequeue_count)
            return "poisoned"
        claim = await self._claim(job)
        if claim is None:
            return "duplicate"
        if claim == "busy":
            return "busy"
        result = await self._processor.process(replace(job, claim=claim))
        if result.outcome != "superseded":
            await self._after(job)
        return result.outcome

    async def _claim(self, job: ProcessingJob) -> str | None:
        """A fresh claim id once the record is claimed; None when there is nothing to do; "busy" when held."""
        location = job.location
        claim = uuid.uuid4().hex
        held = False

        def claimed(item: StoredItem | None) -> dict[str, Any] | None:
            nonlocal held
            held = False
            if item is None or item.body.get("content_hash") != job.content_hash:
                return None  # replaced or deleted: the newer upload has its own job
            if item.body.get("status") in _SETTLED:
                return None  # already processed (a duplicate delivery)
            holder = item.body.get("processing_claim") or {}
            held = bool(holder.get("by")) and float(holder.get("until", 0)) > time.time()
            until = time.time() + self._visibility
            return None if held else {**item.body, "processing_claim": {"by": claim, "until": until}}

        try:
            stored = await update_item(
                self._catalog, location.partition_key, location.item_id, claimed, busy="busy", attempts=_CLAIM_ATTEMPTS
            )
        except StorageUnavailable:
            return "busy"
        return claim if stored is not None else ("busy" if held else None)

    async def _poison(self, job: ProcessingJob, deliveries: int) -> None:
        location = job.location
        reason = f"processing did not finish after {deliveries - 1} attempts; upload the document again"

        def failed(item: StoredItem | None) -> dict[str, Any] | None:
            if item is None or item.body.get("content_hash") != job.content_hash or item.body.get("status") in _SETTLED:
                return None
            return {**item.body, "status": "failed", "status_reason": reason, "updated_at": utc_now()}

        try:
            stored = await update_item(
                self._catalog, location.partition_key, location.item_id, failed, busy="busy", attempts=_CLAIM_ATTEMPTS
            )
        except StorageUnavailable:
            return
        if stored is not None:
            logger.warning("document %s failed: poison job after %d deliveries", location.document_id, deliveries)
            await self._after(job)

    async def _after(self, job: ProcessingJob) -> None:
        """A session document settled: its session's digests are refreshed by a digest job."""
        location = job.location
        item = await self._catalog.get(location.partition_key, location.item_id)
        if item is not None and item.body.get("kind") == "session_file" and item.body.get("conversation_id"):
            await self.digests_queue.enqueue(digest_message(location.partition_key, str(item.body["conversation_id"])))

    async def _digest(self, body: dict[str, Any]) -> str:
        try:
            organization, user = str(body["partition_key"]).split("/", 1)
            principal = Principal(organization=organization, user=user)
            conversation_id = str(body["conversation_id"])
        except (KeyError, ValueError):
            raise InvalidInput("not a digest job") from None
        # Digests are cached by content: a repeated job finds them current and makes no model call.
        self._digests.schedule(principal, conversation_id)
        idle = await self._digests.wait_idle(principal, conversation_id, self._visibility * 0.8)
        return "digested" if idle else "busy"

    # -- the polling loop (orc worker) ----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event, *, concurrency: int, idle_pause: float = 1.0) -> None:
        """Consume both queues until ``stop`` is set, ``concurrency`` jobs at a time; idle polls back off."""
        running: set[asyncio.Task[None]] = set()
        turns = FairTurns(concurrency, spare=1)  # a spare turn: one organization's jobs never hold every other's
        held = concurrency * LOOKAHEAD
        stopping = asyncio.create_task(stop.wait())
        pause = 0.05
        try:
            while not stop.is_set():
                received: list[tuple[JobKind, JobQueue, ReceivedJob]] = []
                for kind, queue in (("process", self.documents_queue), ("digest", self.digests_queue)):
                    free = min(held - len(running) - len(received), 32)  # 32: a receive's most
                    if free > 0:
                        kind_: JobKind = "process" if kind == "process" else "digest"
                        try:
                            jobs = await queue.receive(free, self._visibility)
                        except StorageUnavailable as exc:
                            # An outage outlasted the SDK's retries: poll again after the pause, as when idle.
                            logger.warning("receiving %s jobs failed: %s", kind, type(exc).__name__)
                            continue
                        received += [(kind_, queue, job) for job in jobs]
                for kind, queue, job in received:
                    task = asyncio.create_task(self._in_turn(turns, kind, queue, job))
                    running.add(task)
                    task.add_done_callback(running.discard)
                if received:
                    pause = 0.05
                    if len(running) < held:
                        continue
                # Wake on stop, on a finished job (a free slot), or after the polling pause.
                await asyncio.wait({stopping, *running}, timeout=pause, return_when=asyncio.FIRST_COMPLETED)
                if not received:
                    pause = min(pause * 2, idle_pause)
        finally:
            stopping.cancel()
            # Jobs still running are dropped: their deliveries reappear after the visibility timeout.
            for task in running:
                task.cancel()
            await asyncio.gather(stopping, *running, return_exceptions=True)

    async def _in_turn(self, turns: FairTurns, kind: JobKind, queue: JobQueue, job: ReceivedJob) -> None:
        async with turns.turn(organization_of(str(job.body.get("partition_key", "")))):
            await self._settle(kind, queue, job)

    async def _settle(self, kind: JobKind, queue: JobQueue, job: ReceivedJob) -> None:
        try:
            await self.handle(kind, job.body, job.dequeue_count)
        except JobBusy:
            # Back soon: the holder usually finishes well inside its lease, then this delivery is a duplicate.
            await queue.abandon(job, delay_seconds=min(self._visibility / 4, 30.0))
            return
        except InvalidInput:
            logger.warning("dropping a malformed %s job", kind)
        except Exception as exc:
            # Storage outage or a bug: leave the delivery to reappear (and become poison if it keeps failing).
            logger.warning("a %s job failed: %s", kind, type(exc).__name__)
            logger.debug("job failure details", exc_info=True)
            return
        with contextlib.suppress(Exception):
            await queue.complete(job)
