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


_HEADING_MARK = re.compile(r"^\s{0,3}#{1,6}\s")
_TERMINAL = (".", "!", "?", ":", ";", ",")
_MAX_TITLE_CHARS = 60


def _is_heading(lines: list[str], index: int) -> bool:
    """A markdown heading, or a short title line: after a blank line, before text, without closing punctuation.

    Wrapped prose (PDF lines) is not mistaken for titles: its lines rarely follow a blank line and are long.
    """
    line = lines[index].strip()
    if _HEADING_MARK.match(lines[index]):
        return True
    after_blank = index == 0 or not lines[index - 1].strip()
    before_text = index + 1 < len(lines) and bool(lines[index + 1].strip())
    return (
        after_blank
        and before_text
        and 0 < len(line) <= _MAX_TITLE_CHARS
        and not line.endswith(_TERMINAL)
        and line[:1].isupper()
    )


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences and list items; a heading or title line is a piece of its own (without ``#``).

    Keeping titles apart stops them being glued to the first sentence below them, without losing any text.
    """
    lines = text.splitlines()
    sentences: list[str] = []
    current: list[str] = []

    def flush() -> None:
        block = "\n".join(current)
        sentences.extend(" ".join(piece.split()) for piece in _SENTENCE_END.split(block) if piece and piece.strip())
        current.clear()

    for index, line in enumerate(lines):
        heading = bool(line.strip()) and _is_heading(lines, index)
        if heading or not line.strip():
            flush()
            if heading:
                sentences.append(" ".join(_HEADING_MARK.sub("", line, count=1).split()))
            continue
        current.append(line)
    flush()
    return sentences


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
    """:func:`rank` over passages already split by :func:`tokenize`, for callers that keep the tokens with the
    passages (tokenizing was most of the cost of ranking a few documents' spans on every question)."""
    if not query_terms or not corpus:
        return []
    distinct_query = set(query_terms)
    # BM25Okapi needs at least one non-empty document to compute its statistics.
    if not any(corpus):
        return []
    scores = BM25Okapi([list(doc) or ["\0"] for doc in corpus]).get_scores(list(query_terms))
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
