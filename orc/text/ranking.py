"""Ranking a handful of passages against a question: the spans of a few documents, the sentences of a context.

Built on the same BM25 (:mod:`orc.text.bm25`) and tokens (:mod:`orc.text.tokens`) as the document search index;
here the passages are indexed on the fly, which costs little next to tokenizing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orc.text.bm25 import Postings, index_passages, score
from orc.text.tokens import tokenize


@dataclass(frozen=True, slots=True)
class Ranked:
    """A passage's position in the input and its relevance to the query."""

    index: int
    score: float
    overlap: float
    """Share of the query's distinct content words that occur in the passage (0..1)."""


def rank(query: str, passages: Sequence[str], *, limit: int | None = None) -> list[Ranked]:
    """Rank ``passages`` by BM25 against ``query``; passages sharing no content word with it are left out."""
    return rank_tokenized(tokenize(query), [tokenize(passage) for passage in passages], limit=limit)


def rank_tokenized(
    query_terms: Sequence[str], corpus: Sequence[Sequence[str]], *, limit: int | None = None
) -> list[Ranked]:
    """:func:`rank` over passages already split by :func:`tokenize`."""
    return rank_indexed(query_terms, [index_passages(corpus)], limit=limit) if corpus else []


def rank_indexed(query_terms: Sequence[str], groups: Sequence[Postings], *, limit: int | None = None) -> list[Ranked]:
    """:func:`rank` over passages indexed in groups (e.g. one per document, made once and kept with it);
    a :class:`Ranked`'s ``index`` counts the passages of all the groups, in order."""
    distinct = len(set(query_terms))
    if not distinct:
        return []
    offsets = [0]
    for group in groups:
        offsets.append(offsets[-1] + group.size)
    ranked = []
    for match in score(query_terms, groups):
        overlap = match.matched / distinct
        # BM25's idf is small in tiny corpora (a term in every passage scores ~0); the overlap keeps order sane.
        ranked.append(Ranked(index=offsets[match.group] + match.passage, score=match.score + overlap, overlap=overlap))
    ranked.sort(key=lambda item: (-item.score, item.index))
    return ranked[:limit] if limit is not None else ranked
