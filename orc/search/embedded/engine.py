"""The embedded engine itself: writes queued per organization and committed in batches, and queries sent to the
lexical index (:mod:`orc.search.embedded.lexical`) and the vector side (:mod:`orc.search.embedded.vectors`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

from orc.search.embedded.directory import Delete, DocumentsDatabase, Operation, Upsert, writes_vectors
from orc.search.embedded.layout import layout_root
from orc.search.embedded.lexical import LexicalIndexes
from orc.search.embedded.upkeep import FOLD_SPANS, MAX_SEGMENT_SPANS, SegmentUpkeep
from orc.search.embedded.vectors import EXACT_SPANS, VECTOR_CACHE_BYTES, VectorSearch
from orc.search.fusion import fused_hits
from orc.search.port import (
    IndexedDocument,
    IndexedEntry,
    SearchFilter,
    SearchRequest,
    SpanHit,
    TermStatistics,
)

logger = logging.getLogger(__name__)


class EmbeddedSearchEngine:
    """:class:`~orc.search.port.SearchEngine` on the local disk under ``root``; see :mod:`orc.search.embedded`."""

    def __init__(
        self,
        root: Path,
        *,
        exact_spans: int = EXACT_SPANS,
        fold_spans: int = FOLD_SPANS,
        max_segment_spans: int = MAX_SEGMENT_SPANS,
        fold_in_background: bool = True,
    ) -> None:
        """``exact_spans`` … ``max_segment_spans``: where vector queries turn approximate and how segments are
        made (see the constants); ``fold_in_background=False`` folds and merges inside the write that made them
        due, before it returns (tests, and a bulk load that searches right after)."""
        root = layout_root(root)
        self._database = DocumentsDatabase(root)
        self._lexical = LexicalIndexes(root)
        self._vectors = VectorSearch(root, self._database, cache_bytes=VECTOR_CACHE_BYTES, exact_spans=exact_spans)
        self._upkeep = SegmentUpkeep(root, self._database, fold_spans=fold_spans, max_segment_spans=max_segment_spans)
        self._fold_in_background = fold_in_background
        self._maintaining: dict[str, asyncio.Task[None]] = {}
        self._pending: dict[str, list[tuple[Operation, asyncio.Future[None]]]] = {}
        self._flushing: dict[str, asyncio.Task[None]] = {}
        self._closed = False

    @property
    def native_hybrid(self) -> bool:
        """False: its hybrid query is plain reciprocal rank fusion of its two legs, which the retriever's own
        fusion (over its re-ranked lexical leg) improves on."""
        return False

    # -- writes ------------------------------------------------------------------------------------------------

    async def upsert(self, document: IndexedDocument) -> None:
        """Replace ``document``'s entry; returns once it is committed."""
        if document.vectors is not None and len(document.vectors) != len(document.spans):
            raise ValueError("vectors must hold one row per span")
        await self._submit(document.organization, Upsert(document))

    async def delete(self, organization: str, document_id: str) -> None:
        """Remove ``document_id``'s entry; returns once it is committed."""
        await self._submit(organization, Delete(document_id))

    async def _submit(self, organization: str, operation: Operation) -> None:
        if self._closed:
            raise RuntimeError("the search engine is closed")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(organization, []).append((operation, future))
        if organization not in self._flushing:
            self._flushing[organization] = asyncio.create_task(self._flush(organization), name="search-commit")
        # The commit goes on if this caller is cancelled: a half-applied batch is never left behind.
        await asyncio.shield(future)

    async def _flush(self, organization: str) -> None:
        try:
            while batch := self._pending.pop(organization, None):
                try:
                    await asyncio.to_thread(self._apply, organization, [operation for operation, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                else:
                    for _, future in batch:
                        if not future.done():
                            future.set_result(None)
                    if self._fold_in_background and writes_vectors([operation for operation, _ in batch]):
                        self._start_maintenance(organization)
        finally:
            self._flushing.pop(organization, None)

    def _start_maintenance(self, organization: str) -> None:
        if organization in self._maintaining or self._closed:
            return
        task = asyncio.create_task(asyncio.to_thread(self._upkeep.run, organization), name="search-vectors")
        self._maintaining[organization] = task

        def done(finished: asyncio.Task[None]) -> None:
            self._maintaining.pop(organization, None)
            if not finished.cancelled() and (error := finished.exception()) is not None:
                logger.warning("folding span vectors failed: %s", type(error).__name__)

        task.add_done_callback(done)

    async def compact(self, organization: str) -> None:
        """Fold the vectors of recently indexed documents into ANN segments and merge segments now (otherwise
        done in the background after writes): a search afterwards scans nothing exactly but small scopes."""
        running = self._maintaining.get(organization)
        if running is not None:
            await asyncio.gather(running, return_exceptions=True)
        await asyncio.to_thread(self._upkeep.run, organization, wait=True)

    def _apply(self, organization: str, operations: Sequence[Operation]) -> None:
        """One commit for a batch, in order: the lexical index first, then the SQLite rows that say it is there
        (a crash between the two leaves a row naming an older version, which the retriever re-indexes)."""
        self._lexical.of(organization).write(operations)
        self._database.write(organization, operations)
        if not self._fold_in_background and writes_vectors(operations):
            self._upkeep.run(organization, wait=True)

    # -- reads -------------------------------------------------------------------------------------------------

    async def search(self, request: SearchRequest) -> list[SpanHit]:
        """BM25 (tantivy), cosine similarity, or both fused by reciprocal rank fusion."""
        if request.limit < 1 or _empty(request.filter):
            return []
        lexical: list[SpanHit] = []
        vector: list[SpanHit] = []
        if request.mode != "vector":
            lexical = await asyncio.to_thread(self._lexical_search, request)
        if request.mode != "lexical":
            vector = await asyncio.to_thread(self._vector_search, request)
        if request.mode == "lexical":
            return lexical
        if request.mode == "vector":
            return vector
        return fused_hits(lexical, vector, request.limit)

    def _lexical_search(self, request: SearchRequest) -> list[SpanHit]:
        organization = request.filter.organization
        return self._lexical.of(organization).search(request, self._database.directory(organization))

    def _vector_search(self, request: SearchRequest) -> list[SpanHit]:
        return self._vectors.search(request, self._lexical.of(request.filter.organization))

    async def spans(self, organization: str, document_id: str, ordinals: Sequence[int]) -> list[SpanHit]:
        """The spans of ``document_id`` at ``ordinals``, read from the index's stored fields."""
        wanted = sorted({ordinal for ordinal in ordinals if ordinal >= 0})
        if not wanted:
            return []
        # The index is opened (on first use) in the worker thread too: it reads files.
        return await asyncio.to_thread(lambda: self._lexical.of(organization).spans(document_id, wanted))

    async def entries(self, organization: str, document_ids: Sequence[str]) -> dict[str, IndexedEntry]:
        """The indexed version of each of ``document_ids`` (from the organization's documents table, read again
        only after a commit)."""
        return await asyncio.to_thread(self._entries, organization, document_ids)

    def _entries(self, organization: str, document_ids: Sequence[str]) -> dict[str, IndexedEntry]:
        rows = self._database.directory(organization).rows
        return {document_id: row.entry for document_id in document_ids if (row := rows.get(document_id)) is not None}

    async def statistics(self, organization: str, terms: Sequence[str]) -> TermStatistics:
        """Span count and token total from the documents table, span frequencies from the index's term
        dictionary."""
        return await asyncio.to_thread(self._statistics, organization, terms)

    def _statistics(self, organization: str, terms: Sequence[str]) -> TermStatistics:
        directory = self._database.directory(organization)
        frequencies = self._lexical.of(organization).frequencies(terms) if terms and directory.spans else {}
        average = directory.tokens / directory.spans if directory.spans else 0.0
        return TermStatistics(spans=directory.spans, average_length=average, frequencies=frequencies)

    async def vocabulary(self, organization: str, prefix: str, limit: int) -> list[str]:
        """Terms of the span text starting with ``prefix`` (tantivy's term dictionary)."""
        if limit < 1:
            return []
        return await asyncio.to_thread(lambda: self._lexical.of(organization).vocabulary(prefix, limit))

    async def aclose(self) -> None:
        """Wait for queued writes, then close the SQLite connection (the indexes stay on disk)."""
        self._closed = True
        self._upkeep.stop()
        while self._flushing or self._maintaining:
            await asyncio.gather(*self._flushing.values(), *self._maintaining.values(), return_exceptions=True)
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        self._database.close()
        self._lexical.clear()
        self._vectors.clear()


def _empty(where: SearchFilter) -> bool:
    return (where.owners is not None and not where.owners) or (where.documents is not None and not where.documents)
