"""Finishing the document work a crashed process left: uploads and processing whose lease lapsed.

Each sweep takes over the lapsed leases (:mod:`orc.documents.intake.leases`) one by one — a conditional write, so two
instances sweeping at once never both resume a document — and looks at the document as stored:

- its record is gone, describes newer content, or is already ``ready``/``failed`` → the lease is dropped;
- its blob is missing or holds other bytes (the crash came while the upload was being written) → ``failed``,
  "upload it again";
- it was taken over too many times (a document that brings its process down) → ``failed``;
- otherwise it is processed again, in this process or, with queues, by a queue worker.

Embedded, the runtime sweeps every 15 s (``orc.composition.tuning``); on Azure a timer function does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from orc.documents.intake.leases import Lease, ProcessingLeases
from orc.documents.intake.processing import DocumentLocation, DocumentProcessor, ProcessingResult
from orc.periodic import every
from orc.storage.ports import BlobStore, DocumentCollection

__all__ = ["INTERRUPTED_UPLOAD", "MAX_TAKE_OVERS", "DocumentRecovery"]

logger = logging.getLogger(__name__)

MAX_TAKE_OVERS = 3
INTERRUPTED_UPLOAD = "the upload was interrupted before the file was stored; upload it again"
INTERRUPTED_TOO_OFTEN = "processing this document was interrupted {count} times; upload it again or another copy"


class DocumentRecovery:
    """Sweeps lapsed leases and resumes or fails the documents they name."""

    def __init__(
        self,
        leases: ProcessingLeases,
        catalog: DocumentCollection,
        blobs: BlobStore,
        processor: DocumentProcessor,
        *,
        on_resumed: Callable[[DocumentLocation, Mapping[str, Any]], None] | None = None,
    ) -> None:
        self._leases = leases
        self._catalog = catalog
        self._blobs = blobs
        self._processor = processor
        # Told of each resumed document (its record as stored): a session file's digests are scheduled again.
        self._on_resumed = on_resumed

    async def sweep(self) -> list[asyncio.Task[ProcessingResult]]:
        """One pass: every lapsed lease this process wins is settled or resumed; returns the resumed jobs."""
        resumed = []
        for lapsed in await self._leases.lapsed():
            lease = await self._leases.take_over(lapsed)
            if lease is None:
                continue  # another instance took it
            task = await self._recover(lease)
            if task is not None:
                resumed.append(task)
        return resumed

    async def _recover(self, lease: Lease) -> asyncio.Task[ProcessingResult] | None:
        job = lease.job
        location = job.location
        item = await self._catalog.get(location.partition_key, location.item_id)
        if (
            item is None
            or item.body.get("content_hash") != job.content_hash
            or item.body.get("status") not in ("uploading", "processing")
        ):
            await self._leases.drop(lease)
            return None
        logger.info("resuming the interrupted work on document %s", location.document_id)
        if lease.attempts > MAX_TAKE_OVERS:
            await self._processor.fail(job, INTERRUPTED_TOO_OFTEN.format(count=lease.attempts))
            await self._leases.drop(lease)
            return None
        stored = await self._blobs.head(location.blob_path)
        if stored is None or stored.metadata.get("sha256") != job.content_hash:
            await self._processor.fail(job, INTERRUPTED_UPLOAD)
            await self._leases.drop(lease)
            return None
        task = await self._processor.resume(job)
        if task is not None and self._on_resumed is not None:
            self._on_resumed(location, item.body)
        return task


async def sweep_interrupted_documents(recovery: DocumentRecovery, every_seconds: float) -> None:
    """Sweep at once, then every ``every_seconds``, until cancelled (the embedded runtime's background task)."""
    await every(
        every_seconds, recovery.sweep, failure="resuming interrupted documents failed", log=logger, at_once=True
    )
