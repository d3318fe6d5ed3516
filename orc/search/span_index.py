"""Lexical search over the spans of many documents: one index per document, field-weighted BM25 over their union.

A document's index holds its spans' text and section titles as two fields, and each span's sentences, so a query
in a user's own words is expanded and re-ranked at sentence level (:mod:`orc.text.lexical`). Each document's
index depends only on its text, so it is cached per process by (``extracted_text_hash``, ``chunking_version``)
and rebuilt from the stored text when missing: the persisted spans are the truth, the
index is a derived cache that works the same over every storage backend. A query scores the union of the
available documents' spans with corpus statistics (document frequencies, average length) summed over that
union, so a span ranks the same wherever its document sits in the tree. Tokens and BM25 are
:mod:`orc.text`'s, the same every other ranking in orc uses.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from orc.search.text_store import DocumentText
from orc.text import Postings
from orc.text.lexical import LexicalIndex, index_fields, search

IndexKey = tuple[str, str]
"""(``extracted_text_hash``, ``chunking_version``)."""


@dataclass(frozen=True, slots=True)
class SpanIndex:
    """The inverted index of one document's spans."""

    text: DocumentText
    lexical: LexicalIndex

    @property
    def postings(self) -> Postings:
        """The inverted index of the spans' text."""
        return self.lexical.body

    @property
    def span_count(self) -> int:
        """How many spans the document has."""
        return self.lexical.size


def index_key(text: DocumentText) -> IndexKey:
    """The cache key of ``text``'s index."""
    return (text.extracted_text_hash, text.chunking_version)


def build_index(text: DocumentText) -> SpanIndex:
    """Tokenize every span, and the title path of the section it is in as a field of its own (CPU-bound: run it
    in a thread for big documents).

    A span is found by the words of the section it is in ("Requirements" finds the list under that heading), for
    :data:`orc.text.lexical.TITLE_WEIGHT` of what the same words in its text would count."""
    return SpanIndex(
        text=text, lexical=index_fields([span.text for span in text.spans], [span.section for span in text.spans])
    )


@dataclass(frozen=True, slots=True)
class Hit:
    """One span found: which of the searched documents, which span, and how well it matches."""

    document: int
    span: int
    score: float


def bm25(query: str, indexes: Sequence[SpanIndex], weights: Sequence[float], limit: int) -> list[Hit]:
    """The ``limit`` best spans of ``indexes`` for ``query``; each document's scores are scaled by its weight."""
    found = search(query, [index.lexical for index in indexes], weights, limit=limit)
    return [Hit(document=match.group, span=match.passage, score=round(match.score, 4)) for match in found]


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
