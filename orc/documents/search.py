"""Lexical search over the spans of many documents: one inverted index per document, BM25 over their union.

Each document's index depends only on its text, so it is cached per process by (``extracted_text_hash``,
``chunking_version``) and rebuilt from the stored text when missing: the persisted spans are the truth, the
index is a derived cache that works the same over every storage backend. A query scores the union of the
available documents' spans with corpus statistics (document frequencies, average length) summed over that
union, so a span ranks the same wherever its document sits in the tree.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orc.documents.text_store import DocumentText
from orc.text import tokenize

K1 = 1.5
B = 0.75

IndexKey = tuple[str, str]
"""(``extracted_text_hash``, ``chunking_version``)."""


@dataclass(frozen=True, slots=True)
class SpanIndex:
    """The inverted index of one document's spans."""

    text: DocumentText
    postings: Mapping[str, tuple[tuple[int, int], ...]]
    """term → ((span index, term frequency), ...)."""
    lengths: tuple[int, ...]
    total_length: int

    @property
    def span_count(self) -> int:
        """How many spans the document has."""
        return len(self.lengths)


def index_key(text: DocumentText) -> IndexKey:
    """The cache key of ``text``'s index."""
    return (text.extracted_text_hash, text.chunking_version)


def build_index(text: DocumentText) -> SpanIndex:
    """Tokenize every span (CPU-bound: run it in a thread for big documents)."""
    postings: dict[str, list[tuple[int, int]]] = {}
    lengths: list[int] = []
    for position, span in enumerate(text.spans):
        counts = Counter(tokenize(span.text))
        lengths.append(sum(counts.values()))
        for term, frequency in counts.items():
            postings.setdefault(term, []).append((position, frequency))
    return SpanIndex(
        text=text,
        postings={term: tuple(entries) for term, entries in postings.items()},
        lengths=tuple(lengths),
        total_length=sum(lengths),
    )


@dataclass(frozen=True, slots=True)
class Hit:
    """One span found: which of the searched documents, which span, and how well it matches."""

    document: int
    span: int
    score: float


def bm25(query: str, indexes: Sequence[SpanIndex], weights: Sequence[float], limit: int) -> list[Hit]:
    """The ``limit`` best spans of ``indexes`` for ``query``; each document's scores are scaled by its weight."""
    terms = list(dict.fromkeys(tokenize(query)))
    span_total = sum(index.span_count for index in indexes)
    if not terms or span_total == 0 or limit <= 0:
        return []
    average = max(sum(index.total_length for index in indexes) / span_total, 1.0)
    frequencies = {term: sum(len(index.postings.get(term, ())) for index in indexes) for term in terms}
    idf = {term: math.log((span_total - df + 0.5) / (df + 0.5) + 1.0) for term, df in frequencies.items() if df > 0}
    candidates: list[tuple[float, int, int]] = []
    for position, (index, weight) in enumerate(zip(indexes, weights, strict=True)):
        scores: dict[int, float] = {}
        for term, term_idf in idf.items():
            for span, frequency in index.postings.get(term, ()):
                norm = K1 * (1.0 - B + B * index.lengths[span] / average)
                scores[span] = scores.get(span, 0.0) + term_idf * frequency * (K1 + 1.0) / (frequency + norm)
        candidates.extend((score * weight, position, span) for span, score in scores.items())
    best = heapq.nsmallest(limit, candidates, key=lambda item: (-item[0], item[1], item[2]))
    return [Hit(document=position, span=span, score=round(score, 4)) for score, position, span in best]


class IndexCache:
    """A per-process LRU of document indexes, bounded by the number of spans it holds. Thread-safe."""

    def __init__(self, max_spans: int = 300_000) -> None:
        if max_spans < 1:
            raise ValueError("max_spans must be positive")
        self._max_spans = max_spans
        self._entries: OrderedDict[IndexKey, SpanIndex] = OrderedDict()
        self._spans = 0
        self._lock = threading.Lock()

    def get(self, key: IndexKey) -> SpanIndex | None:
        """The cached index, marked as recently used."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, index: SpanIndex) -> None:
        """Cache ``index``, evicting the least recently used ones past the span budget (never the new one)."""
        key = index_key(index.text)
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._spans -= previous.span_count
            self._entries[key] = index
            self._spans += index.span_count
            while self._spans > self._max_spans and len(self._entries) > 1:
                _, evicted = self._entries.popitem(last=False)
                self._spans -= evicted.span_count

    def clear(self) -> None:
        """Forget every index (they are rebuilt from the stored text on next use)."""
        with self._lock:
            self._entries.clear()
            self._spans = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
