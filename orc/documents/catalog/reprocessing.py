"""The reprocessing policy: when a document that cannot be read is put back into the processing pipeline.

A document's text can be unreadable for reasons the upload never saw: processing failed (perhaps transiently),
the process that was processing it died (the record stays ``processing`` with no job anywhere), its text was
spanned by an older chunker, or its stored text is gone. The document tools meet these documents; rather than
report them ``not_ready`` for ever, they ask the :class:`Reprocessor` to start again, once, with a conditional
write so that two processes never both restart the same document.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from orc.clock import utc_now
from orc.documents.catalog.availability import AvailableDocument
from orc.documents.intake.processing import DocumentProcessor, ProcessingJob, ProcessingResult
from orc.errors import ETagMismatch
from orc.search.spans import CHUNKING_VERSION
from orc.storage.ports import DocumentCollection

logger = logging.getLogger(__name__)

STALE_PROCESSING = timedelta(minutes=5)
"""A document ``processing`` this long without a job in this process is presumed orphaned (its process died)."""

Job = asyncio.Task[ProcessingResult]


def usable(document: AvailableDocument) -> bool:
    """Ready, with text extracted by the current chunker (an older chunking means reprocessing)."""
    return (
        document.info.status == "ready"
        and document.extracted_text_hash is not None
        and document.chunking_version == CHUNKING_VERSION
    )


class Reprocessor:
    """Restarts processing of documents whose text cannot be read (see the module docstring for when)."""

    def __init__(
        self,
        catalog: DocumentCollection,
        processor: DocumentProcessor,
        *,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._catalog = catalog
        self._processor = processor
        self._now = now

    def orphaned(self, document: AvailableDocument) -> bool:
        """Ready with text that cannot be used, or ``uploading``/``processing`` for longer than :data:`STALE_PROCESSING`
        with no job in this process."""
        info = document.info
        if info.status == "ready":
            return not usable(document)
        if info.status not in ("uploading", "processing") or self._processor.running(document.location):
            return False
        try:
            updated = datetime.fromisoformat(info.updated_at)
        except ValueError:
            return True
        if updated.tzinfo is None:
            updated = updated.replace(tzinfo=UTC)
        return self._now() - updated > STALE_PROCESSING

    async def follow(self, document: AvailableDocument, wait_seconds: float) -> None:
        """Wait up to ``wait_seconds`` for the document's processing: the job already running, else a restart
        when it failed or was orphaned (a document being processed elsewhere is left alone)."""
        job = self._processor.running(document.location)
        if job is None and (document.info.status == "failed" or self.orphaned(document)):
            job = await self.restart(document)
        if job is not None:
            await self._processor.wait([job], wait_seconds)

    async def recover(self, document: AvailableDocument) -> Job | None:
        """Put back into the pipeline a document whose text could not be read: orphaned, or ready but with its
        stored text missing. Failed documents and documents in flight are left as they are."""
        if self.orphaned(document) or usable(document):
            return await self.restart(document)
        return None

    async def restart(self, document: AvailableDocument) -> Job | None:
        """Mark the document ``processing`` again and submit it; ``None`` when the record changed meanwhile."""
        running = self._processor.running(document.location)
        if running is not None:
            return running
        location = document.location
        item = await self._catalog.get(location.partition_key, location.item_id)
        if item is None or item.body.get("content_hash") != document.content_hash:
            return None
        body = {**item.body, "status": "processing", "status_reason": None, "updated_at": utc_now()}
        try:
            await self._catalog.replace(location.partition_key, location.item_id, body, if_match=item.etag)
        except ETagMismatch:
            return self._processor.running(location)
        logger.info("reprocessing document %s", location.document_id)
        content_type = None if document.content_type == "application/octet-stream" else document.content_type
        return self._processor.submit(ProcessingJob(location, document.content_hash, content_type))
