"""The digests as the document tools see them: the library's
:class:`~orc.documents.catalog.summaries.SummaryProvider`.

``documents.get_summary`` serves a document's per-file digest; ``documents.analyze`` asks for it. For a session
document that schedules the session's refresh (so its aggregate follows); for a context document (organization,
folder, usecase) it runs Task A for that document alone. Either way the caller waits at most ``wait_seconds``:
a small document comes back with its summary, a big one with ``parsing`` while the digest finishes in the
background.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import TYPE_CHECKING, cast

from orc.digests.files import DigestTarget, FileDigests
from orc.digests.sessions import SessionDigests
from orc.documents.catalog.summaries import DocumentSummary
from orc.documents.records import DigestStatus
from orc.principal import Principal
from orc.storage.ports import DocumentCollection

if TYPE_CHECKING:
    from orc.documents.catalog.availability import AvailableDocument

ANALYZE_WAIT_SECONDS = 10.0
"""How long ``documents.analyze`` waits for a digest before answering with its status."""


class DigestSummaries:
    """Per-file digests for the ``documents.*`` tools."""

    def __init__(
        self,
        catalog: DocumentCollection,
        sessions: SessionDigests,
        file_digests: FileDigests,
        *,
        wait_seconds: float = ANALYZE_WAIT_SECONDS,
    ) -> None:
        self._catalog = catalog
        self._sessions = sessions
        self._file_digests = file_digests
        self._wait_seconds = wait_seconds
        self._running: set[asyncio.Task[DigestStatus]] = set()

    async def summary(self, principal: Principal, document: AvailableDocument) -> DocumentSummary | None:
        """The document's digest for its current text, or ``None`` when it has none (yet)."""
        location = document.location
        item = await self._catalog.get(location.partition_key, location.item_id)
        if item is None:
            return None
        digest = await self._file_digests.load(location.partition_key, item.body)
        if digest is None:
            return None
        facts = [fact for fact in digest.get("facts") or [] if isinstance(fact, dict)]
        return DocumentSummary(
            document_id=document.info.document_id,
            filename=document.info.filename,
            summary=str(digest.get("summary", "")),
            facts=facts,
            prompt_version=item.body.get("prompt_version"),
        )

    async def request(self, principal: Principal, document: AvailableDocument) -> DigestStatus:
        """Start the digest when it is missing, stale or failed; wait a little; return the digest status."""
        info = document.info
        if info.status != "ready":
            return info.digest_status
        location = document.location
        if info.context_type == "session":
            self._sessions.schedule(principal, info.context_id, retry={info.document_id})
            await self._sessions.wait_idle(principal, info.context_id, self._wait_seconds)
        else:
            item = await self._catalog.get(location.partition_key, location.item_id)
            target = DigestTarget.of(location, item.body) if item is not None else None
            if target is not None and (
                item is not None
                and (item.body.get("digest_status") == "error" or not self._file_digests.is_current(item.body))
            ):
                # A fresh context: the digest is not part of the tool call (or turn) that asked for it.
                task = asyncio.create_task(self._file_digests.ensure(target), context=contextvars.Context())
                self._running.add(task)
                task.add_done_callback(self._running.discard)
                await asyncio.wait([task], timeout=self._wait_seconds)
        item = await self._catalog.get(location.partition_key, location.item_id)
        status = item.body.get("digest_status", "none") if item is not None else "none"
        return cast(DigestStatus, status) if status in ("none", "stale", "parsing", "ready", "error") else "none"

    async def aclose(self) -> None:
        """Cancel the digests started for context documents."""
        tasks = list(self._running)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
