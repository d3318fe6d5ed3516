"""BM25: the one lexical scorer of orc, over inverted indexes of tokenized passages.

Passages are indexed in groups (one :class:`Postings` per document, or per call for a handful of passages), and
a query scores the union of the groups it is given with corpus statistics (passage count, document frequencies,
average length) summed over that union: a passage scores the same whichever other groups are searched with it
only through those shared statistics, never through the order the groups come in. The idf is Lucene's
``log(1 + (N - df + 0.5) / (df + 0.5))``, which stays positive for a term found in most passages.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

K1 = 1.5
B = 0.75


@dataclass(frozen=True, slots=True)
class Postings:
    """The inverted index of a group of tokenized passages."""

    terms: dict[str, tuple[tuple[int, int], ...]]
    """term → ((passage index, term frequency), ...), in passage order."""
    lengths: tuple[int, ...]
    """Each passage's token count."""
    total_length: int

    @property
    def size(self) -> int:
        """How many passages are indexed."""
        return len(self.lengths)


def index_passages(passages: Iterable[Sequence[str]]) -> Postings:
    """Index tokenized passages (see :func:`orc.text.tokenize`)."""
    terms: dict[str, list[tuple[int, int]]] = {}
    lengths: list[int] = []
    for position, tokens in enumerate(passages):
        lengths.append(len(tokens))
        for term, frequency in Counter(tokens).items():
            entries = terms.get(term)
            if entries is None:
                terms[term] = [(position, frequency)]
            else:
                entries.append((position, frequency))
    return Postings(
        terms={term: tuple(entries) for term, entries in terms.items()},
        lengths=tuple(lengths),
        total_length=sum(lengths),
    )


@dataclass(frozen=True, slots=True)
class Match:
    """A passage that shares at least one term with the query."""

    group: int
    """Which of the scored :class:`Postings`."""
    passage: int
    score: float
    matched: int
    """How many of the query's distinct terms occur in the passage."""


def score(
    query_terms: Sequence[str],
    groups: Sequence[Postings],
    weights: Sequence[float] | None = None,
    *,
    term_weights: Mapping[str, float] | None = None,
) -> list[Match]:
    """Every passage of ``groups`` that shares a term with the query, scored, in no particular order; each
    group's scores are multiplied by its weight (1 when ``weights`` is ``None``), each term's by its
    ``term_weights`` entry (1 when absent: an expanded query weighs the terms it added below the user's own)."""
    return [
        Match(group=group, passage=passage, score=-negated, matched=matched)
        for negated, group, passage, matched in _scored(query_terms, groups, weights, term_weights)
    ]


def best(
    query_terms: Sequence[str], groups: Sequence[Postings], weights: Sequence[float] | None = None, *, limit: int
) -> list[Match]:
    """The ``limit`` best passages of :func:`score`, best first; ties go to the earlier group, then passage."""
    if limit <= 0:
        return []
    # Plain tuples that sort best first until the few winners are known: a common term can match most of
    # a large document's passages, and a key function per candidate would cost as much as the scoring.
    top = heapq.nsmallest(limit, _scored(query_terms, groups, weights, None))
    return [
        Match(group=group, passage=passage, score=-negated, matched=matched) for negated, group, passage, matched in top
    ]


def _scored(
    query_terms: Sequence[str],
    groups: Sequence[Postings],
    weights: Sequence[float] | None,
    term_weights: Mapping[str, float] | None,
) -> Iterator[tuple[float, int, int, int]]:
    """(-score, group, passage, matched terms) of every passage that shares a term with the query."""
    if weights is not None and len(weights) != len(groups):
        raise ValueError("one weight per group")
    terms = list(dict.fromkeys(query_terms))
    passage_count = sum(group.size for group in groups)
    if not terms or passage_count == 0:
        return
    average = max(sum(group.total_length for group in groups) / passage_count, 1.0)
    idf: dict[str, float] = {}
    for term in terms:
        found = sum(len(group.terms.get(term, ())) for group in groups)
        if found:
            idf[term] = math.log((passage_count - found + 0.5) / (found + 0.5) + 1.0)
            if term_weights is not None:
                idf[term] *= term_weights.get(term, 1.0)
    # score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average)), with the constants hoisted.
    constant = K1 * (1.0 - B)
    per_length = K1 * B / average
    for position, group in enumerate(groups):
        weight = -(K1 + 1.0) * (1.0 if weights is None else weights[position])
        lengths = group.lengths
        scores: dict[int, float] = {}
        matched: dict[int, int] = {}
        for term, term_idf in idf.items():
            factor = term_idf * weight
            for passage, frequency in group.terms.get(term, ()):
                value = factor * frequency / (frequency + constant + per_length * lengths[passage])
                if passage in scores:
                    scores[passage] += value
                    matched[passage] += 1
                else:
                    scores[passage] = value
                    matched[passage] = 1
        for passage, value in scores.items():
            yield value, position, passage, matched[passage]
