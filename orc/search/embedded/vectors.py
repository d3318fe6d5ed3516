"""The embedded engine's vector queries: exact over a small scope, from the organization's ANN segments past it.

A query whose scope holds few spans (a session's, a team's) is answered exactly: one matrix product per document,
with a per-process cache bounded in bytes. Past that, an exact scan would read every vector of the organization
(1.5 GB at a million spans of 384 dimensions), so the segments answer (:mod:`orc.search.embedded.segments`) and
only the vectors of documents indexed since the last fold are scanned exactly. A hit whose vector set is no longer
current (replaced, deleted) is dropped, so the next search after a replace finds the new vectors and never the old,
in every process, whether or not they were folded yet.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from cachetools import LRUCache

from orc.search.embedded.directory import DocumentsDatabase, VectorSet
from orc.search.embedded.layout import organization_folder
from orc.search.embedded.lexical import LexicalIndex
from orc.search.embedded.segments import SegmentViews, entry_of
from orc.search.port import SearchRequest, SpanHit

if TYPE_CHECKING:  # numpy loads only where vectors are searched or stored
    import numpy as np
    import numpy.typing as npt

VECTOR_CACHE_BYTES = 128 << 20
"""Span vectors a process keeps between searches."""
EXACT_SPANS = 20_000
"""A vector query whose scope holds at most this many spans is answered exactly (a few milliseconds); above it the
organization's ANN segments answer, and only the delta not yet folded into one is scanned exactly."""


class VectorSearch:
    """Vector queries over the vector sets and segments of :class:`DocumentsDatabase` under ``root``."""

    def __init__(
        self,
        root: Path,
        database: DocumentsDatabase,
        *,
        cache_bytes: int = VECTOR_CACHE_BYTES,
        exact_spans: int = EXACT_SPANS,
    ) -> None:
        self._root = root
        self._database = database
        self._exact_spans = exact_spans
        self._views = SegmentViews()
        # Least recently used first out, bounded by the matrices' bytes.
        self._matrices: LRUCache[tuple[str, int], npt.NDArray[np.float32]] = LRUCache(
            maxsize=max(cache_bytes, 1), getsizeof=_bytes_of
        )
        self._lock = threading.Lock()

    def search(self, request: SearchRequest, lexical: LexicalIndex) -> list[SpanHit]:
        """The spans nearest the request's vector, of its model, inside its filter (their text from ``lexical``)."""
        if request.vector is None or request.vector_model is None:
            return []
        try:
            return self._search_once(request, lexical)
        except FileNotFoundError:
            # A segment this process last read of was merged away meanwhile: read the directory again.
            self._database.read_again()
            return self._search_once(request, lexical)

    def _search_once(self, request: SearchRequest, lexical: LexicalIndex) -> list[SpanHit]:
        import numpy as np

        query = np.asarray(request.vector, dtype=np.float32).reshape(-1)
        where = request.filter
        directory = self._database.directory(where.organization)
        model = request.vector_model
        of_model = [item for item in directory.vector_sets.values() if item.model == model]
        in_scope = {
            item.entry: item
            for item in of_model
            if (row := directory.rows.get(item.document_id)) is not None
            and row.entry.version == item.version
            and (where.owners is None or row.owner in where.owners)
            and (where.documents is None or item.document_id in where.documents)
        }
        scope_spans = sum(found.spans for found in in_scope.values())
        segments = [segment for segment in directory.segments if segment.model == model and segment.dims == len(query)]
        approximate = bool(segments) and scope_spans > self._exact_spans
        exact = [item for item in in_scope.values() if not approximate or item.segment is None]
        found: list[tuple[float, int, int]] = []  # (similarity, entry, ordinal)
        for vector_set in sorted(exact, key=lambda item: (item.document_id, item.entry)):
            matrix = self._matrix(where.organization, vector_set)
            if matrix is None or matrix.shape[1] != len(query) or not len(matrix):
                continue
            scores = matrix @ query
            limit = min(request.limit, len(scores))
            top = np.argpartition(-scores, limit - 1)[:limit] if len(scores) > limit else np.arange(len(scores))
            found.extend((float(scores[row]), vector_set.entry, int(row)) for row in top)
        if approximate:
            # Ask each graph for enough neighbours that the scope's share of them still fills the limit.
            model_spans = sum(item.spans for item in of_model) or 1
            share = max(scope_spans / model_spans, 1e-6)
            count = min(max(2 * request.limit, int(2 * request.limit / share)), 4096)
            folder = organization_folder(self._root, "vectors", where.organization)
            self._views.retain(folder, [folder / segment.file for segment in directory.segments])
            for segment in segments:
                for key_, similarity in self._views.search(folder / segment.file, query, count):
                    entry, ordinal = entry_of(key_)
                    if entry in in_scope and ordinal < in_scope[entry].spans:
                        found.append((similarity, entry, ordinal))
        best: dict[tuple[int, int], float] = {}
        for similarity, entry, ordinal in found:
            best[(entry, ordinal)] = max(similarity, best.get((entry, ordinal), -2.0))
        ranked = sorted(best.items(), key=lambda item: (-item[1], in_scope[item[0][0]].document_id, item[0][1]))[
            : request.limit
        ]
        wanted: dict[str, list[int]] = {}
        for entry, ordinal in (key_ for key_, _ in ranked):
            wanted.setdefault(in_scope[entry].document_id, []).append(ordinal)
        stored = {(hit.document_id, hit.span.ordinal): hit for hit in lexical.spans_of_many(wanted)}
        hits = []
        for (entry, ordinal), value in ranked:
            vector_set = in_scope[entry]
            span = stored.get((vector_set.document_id, ordinal))
            if span is not None and span.version == vector_set.version:
                hits.append(SpanHit(vector_set.document_id, vector_set.version, span.span, round(value, 6)))
        return hits

    def _matrix(self, organization: str, vector_set: VectorSet) -> npt.NDArray[np.float32] | None:
        key = (organization, vector_set.entry)
        with self._lock:
            cached = self._matrices.get(key)
        if cached is not None:
            return cached
        matrix = self._database.matrix(vector_set.entry)
        if matrix is None:
            return None
        if matrix.nbytes <= self._matrices.maxsize:  # a matrix bigger than the whole cache is read every time
            with self._lock:
                self._matrices[key] = matrix
        return matrix

    def clear(self) -> None:
        """Unmap every segment and drop the cached matrices."""
        self._views.clear()
        with self._lock:
            self._matrices.clear()


def _bytes_of(matrix: npt.NDArray[np.float32]) -> int:
    return int(matrix.nbytes)
