"""A search engine in this process's memory: the reference implementation of the port, and the index of text that
is never stored (a blob document_chat extracted on the fly, a passage supplied to a paused turn).

BM25 comes from :mod:`orc.text.bm25`, scored over the union of the documents the filter selects; vectors are
numpy rows compared by dot product (they are unit rows). Nothing here is persisted or shared between processes:
orc's own index of stored documents is :mod:`orc.search.embedded` (or Azure AI Search).
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orc.search.fusion import fused_hits
from orc.search.port import (
    IndexedDocument,
    IndexedEntry,
    IndexedSpan,
    SearchFilter,
    SearchRequest,
    SpanHit,
    TermStatistics,
)
from orc.text.bm25 import Postings, index_passages, score

if TYPE_CHECKING:  # numpy loads only where vectors are searched
    import numpy as np


@dataclass(frozen=True, slots=True)
class _Entry:
    document: IndexedDocument
    body: Postings
    titles: Postings
    matrix: np.ndarray | None


def _entry(document: IndexedDocument) -> _Entry:
    matrix = None
    if document.vectors is not None and len(document.vectors):
        import numpy as np

        matrix = np.asarray(document.vectors, dtype=np.float32)
        if matrix.ndim != 2 or len(matrix) != len(document.spans):
            raise ValueError("vectors must hold one row per span")
    return _Entry(
        document=document,
        body=index_passages(span.terms for span in document.spans),
        titles=index_passages(span.title_terms for span in document.spans),
        matrix=matrix,
    )


class MemorySearchEngine:
    """:class:`~orc.search.port.SearchEngine` in a dict; safe on one event loop (every method is atomic there)."""

    def __init__(self) -> None:
        self._entries: dict[tuple[str, str], _Entry] = {}
        # Each organization's vocabulary in term order, for vocabulary(): rebuilt lazily after a change.
        self._vocabulary: dict[str, list[str]] = {}

    @property
    def native_hybrid(self) -> bool:
        """False: its hybrid query is plain reciprocal rank fusion of its two legs, which the retriever's own
        fusion (over its re-ranked lexical leg) improves on."""
        return False

    async def upsert(self, document: IndexedDocument) -> None:
        """Index ``document`` (tokenizing is done by the caller; this only builds postings)."""
        entry = await asyncio.to_thread(_entry, document) if len(document.spans) > 500 else _entry(document)
        self._entries[(document.organization, document.document_id)] = entry
        self._vocabulary.pop(document.organization, None)

    async def delete(self, organization: str, document_id: str) -> None:
        """Forget the document (no error when unknown)."""
        if self._entries.pop((organization, document_id), None) is not None:
            self._vocabulary.pop(organization, None)

    def _selected(self, where: SearchFilter) -> list[_Entry]:
        found = []
        for (organization, document_id), entry in self._entries.items():
            if organization != where.organization:
                continue
            if where.owners is not None and entry.document.scope.owner not in where.owners:
                continue
            if where.documents is not None and document_id not in where.documents:
                continue
            found.append(entry)
        found.sort(key=lambda entry: entry.document.document_id)
        return found

    async def search(self, request: SearchRequest) -> list[SpanHit]:
        """BM25, cosine similarity, or both fused by reciprocal rank fusion."""
        if request.limit < 1:
            return []
        entries = self._selected(request.filter)
        lexical = self._lexical(request, entries) if request.mode != "vector" else []
        vector = self._vector(request, entries) if request.mode != "lexical" else []
        if request.mode == "lexical":
            return lexical[: request.limit]
        if request.mode == "vector":
            return vector[: request.limit]
        return fused_hits(lexical, vector, request.limit)

    def _lexical(self, request: SearchRequest, entries: Sequence[_Entry]) -> list[SpanHit]:
        terms = [term for term, weight in request.terms.items() if weight > 0]
        if not terms or not entries:
            return []
        weights = dict(request.terms)
        totals: dict[tuple[int, int], float] = {}
        for match in score(terms, [entry.body for entry in entries], term_weights=weights):
            totals[(match.group, match.passage)] = match.score
        if request.title_weight > 0:
            title_weights = [request.title_weight] * len(entries)
            for match in score(terms, [entry.titles for entry in entries], title_weights, term_weights=weights):
                key = (match.group, match.passage)
                totals[key] = totals.get(key, 0.0) + match.score
        ranked = sorted(
            totals.items(),
            key=lambda item: (-item[1], entries[item[0][0]].document.document_id, item[0][1]),
        )
        return [_hit(entries[group], passage, value) for (group, passage), value in ranked[: max(request.limit, 0)]]

    def _vector(self, request: SearchRequest, entries: Sequence[_Entry]) -> list[SpanHit]:
        if request.vector is None or request.vector_model is None:
            return []
        import numpy as np

        query = np.asarray(request.vector, dtype=np.float32).reshape(-1)
        found: list[tuple[float, str, int, _Entry]] = []
        for entry in entries:
            matrix = entry.matrix
            if matrix is None or entry.document.vector_model != request.vector_model or matrix.shape[1] != len(query):
                continue
            scores = matrix @ query
            limit = min(request.limit, len(scores))
            top = np.argpartition(-scores, limit - 1)[:limit] if len(scores) > limit else np.arange(len(scores))
            found.extend((float(scores[row]), entry.document.document_id, int(row), entry) for row in top)
        found.sort(key=lambda item: (-item[0], item[1], item[2]))
        return [_hit(entry, row, round(value, 6)) for value, _, row, entry in found[: request.limit]]

    async def spans(self, organization: str, document_id: str, ordinals: Sequence[int]) -> list[SpanHit]:
        """The spans at ``ordinals``, in order."""
        entry = self._entries.get((organization, document_id))
        if entry is None:
            return []
        count = len(entry.document.spans)
        return [_hit(entry, ordinal, 0.0) for ordinal in sorted(set(ordinals)) if 0 <= ordinal < count]

    async def entries(self, organization: str, document_ids: Sequence[str]) -> dict[str, IndexedEntry]:
        """The entries held for ``document_ids``."""
        found = {}
        for document_id in document_ids:
            entry = self._entries.get((organization, document_id))
            if entry is not None:
                document = entry.document
                model = document.vector_model if entry.matrix is not None else None
                found[document_id] = IndexedEntry(document.version, len(document.spans), model)
        return found

    async def statistics(self, organization: str, terms: Sequence[str]) -> TermStatistics:
        """Counted over every document of ``organization``."""
        entries = [entry for (org, _), entry in self._entries.items() if org == organization]
        spans = sum(entry.body.size for entry in entries)
        length = sum(entry.body.total_length for entry in entries)
        frequencies = {}
        for term in dict.fromkeys(terms):
            count = sum(len(entry.body.terms.get(term, ())) for entry in entries)
            if count:
                frequencies[term] = count
        return TermStatistics(spans=spans, average_length=length / spans if spans else 0.0, frequencies=frequencies)

    async def vocabulary(self, organization: str, prefix: str, limit: int) -> list[str]:
        """Terms of ``organization``'s span text starting with ``prefix``."""
        words = self._vocabulary.get(organization)
        if words is None:
            known: set[str] = set()
            for (org, _), entry in self._entries.items():
                if org == organization:
                    known.update(entry.body.terms)
            words = self._vocabulary[organization] = sorted(known)
        first = bisect.bisect_left(words, prefix)
        found: list[str] = []
        for word in words[first:]:
            if not word.startswith(prefix) or len(found) >= limit:
                break
            found.append(word)
        return found

    async def aclose(self) -> None:
        """Nothing to release."""


def _hit(entry: _Entry, ordinal: int, value: float) -> SpanHit:
    document = entry.document
    span: IndexedSpan = document.spans[ordinal]
    return SpanHit(document.document_id, document.version, span, value)
