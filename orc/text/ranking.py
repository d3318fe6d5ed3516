"""Lexical relevance: stemmed tokens and BM25 (rank-bm25) over a handful of passages.

Used where an index would be overkill: the spans of a few attached documents, the sentences of a context
block. Large collections are searched by the document search service instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer
from rank_bm25 import BM25Okapi

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|\n{2,}|\n(?=\s*(?:[-*•]|\d+[.)])\s)")

# Function words carry no topic; dropping them keeps a question's content words in charge of the score.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    tell please document documents file files say says said according give show find""".split()
)


@lru_cache(maxsize=1)
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def tokenize(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Lower-cased, stemmed content words of ``text``."""
    words = (match.group(0).lower().replace("’", "'") for match in _WORD.finditer(text))
    return [_stem(word) for word in words if keep_stopwords or word not in STOPWORDS]


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences and list items, dropping empty pieces."""
    pieces = _SENTENCE_END.split(text)
    return [" ".join(piece.split()) for piece in pieces if piece and piece.strip()]


@dataclass(frozen=True, slots=True)
class Ranked:
    """A passage's position in the input and its relevance to the query."""

    index: int
    score: float
    overlap: float
    """Share of the query's distinct content words that occur in the passage (0..1)."""


def rank(query: str, passages: Sequence[str], *, limit: int | None = None) -> list[Ranked]:
    """Rank ``passages`` by BM25 against ``query``; passages sharing no content word with it are left out."""
    query_terms = tokenize(query)
    if not query_terms or not passages:
        return []
    corpus = [tokenize(passage) for passage in passages]
    distinct_query = set(query_terms)
    # BM25Okapi needs at least one non-empty document to compute its statistics.
    if not any(corpus):
        return []
    scores = BM25Okapi([doc or ["\0"] for doc in corpus]).get_scores(query_terms)
    ranked: list[Ranked] = []
    for index, doc in enumerate(corpus):
        shared = distinct_query.intersection(doc)
        if not shared:
            continue
        overlap = len(shared) / len(distinct_query)
        # BM25 idf collapses in tiny corpora (a term in every passage scores ~0); the overlap keeps order sane.
        ranked.append(Ranked(index=index, score=float(scores[index]) + overlap, overlap=overlap))
    ranked.sort(key=lambda item: (-item.score, item.index))
    return ranked[:limit] if limit is not None else ranked
