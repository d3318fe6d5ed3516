"""The retriever's lexical leg, made to survive paraphrase (each step cheap and deterministic).

The query's own terms (:func:`orc.text.tokenize`), a follow-up's ``(context: …)`` words at a lower weight,
WordNet-related terms for a word no span uses; BM25 over span text and section titles by the engine; then, over
the first candidates, pseudo-relevance feedback (terms the best spans share) and a sentence-level re-rank (a span
whose matching words sit in one sentence — in a run of a few words of it — beats one whose words are spread).
When the query's words are not in the documents, one more round with the documents' own spellings of them
(``rounds`` 2).
"""

from __future__ import annotations

import difflib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orc.search.port import SearchEngine, SearchFilter, SearchRequest, SpanHit
from orc.search.targets import RankedSpan, Target, search_filter
from orc.text import split_sentences, tokenize
from orc.text.bm25 import K1, B
from orc.text.lexical import split_context
from orc.text.related import related_terms

TITLE_WEIGHT = 1.0
"""A title match counts for this share of a text match of the same term."""
CONTEXT_WEIGHT = 0.5
"""Weight of a term of a follow-up's ``(context: …)`` suffix: it says what the question is about, not what it asks."""
RELATED_WEIGHT = 0.2
"""Weight of a term WordNet relates to a query term that no span uses."""
FEEDBACK_SPANS = 4
"""Best spans of the first pass that the feedback terms are taken from."""
FEEDBACK_TERMS = 6
FEEDBACK_WEIGHT = 0.25
RERANK_DEPTH = 24
"""Candidates the feedback and the sentence-level re-rank may reorder (at least twice the limit)."""
RERANK_WEIGHT = 1.5
"""Weight of the best sentence window's coverage (0..1) against the candidate's score scaled to 0..1."""
NEIGHBOUR_CREDIT = 0.5
"""A query term found in the next or previous sentence counts for this share in a sentence window."""
COVERAGE_WINDOW = 10
"""Terms of a sentence counted together in the sentence-level re-rank; a longer sentence is cut into runs of this
many. Text without full stops — a manual page's option list, a table of contents, a code listing — reads as one
long "sentence" that holds most of a query's words somewhere and outranked the sentence that answers; a run of a
few words is what a phrase of the answer spans (measured on the finding sets: ``bench/README.md``)."""
PREFIX = 5
"""Letters a vocabulary term must share with an unknown query term to stand in for it."""
CLOSE_SPELLING = 0.8
MAX_ALTERNATIVES = 3
VOCABULARY_LIMIT = 20_000


@dataclass(slots=True)
class _Candidate:
    hit: SpanHit
    target: Target
    score: float
    tokens: list[str] | None = None
    sentences: list[frozenset[str]] | None = None

    def tokenized(self) -> None:
        if self.tokens is not None:
            return
        stored = self.hit.span.sentences
        if stored:  # as indexed: nothing to tokenize
            self.sentences = _windows(stored)
            self.tokens = [term for sentence in stored for term in sentence]
            return
        text = self.hit.span.text
        self.tokens = tokenize(text)
        self.sentences = _windows([terms for sentence in split_sentences(text) if (terms := tokenize(sentence))])


def _windows(sentences: Sequence[Sequence[str]]) -> list[frozenset[str]]:
    """The terms of each sentence, a long sentence cut into runs of :data:`COVERAGE_WINDOW` terms."""
    return [
        frozenset(sentence[first : first + COVERAGE_WINDOW])
        for sentence in sentences
        for first in range(0, len(sentence), COVERAGE_WINDOW)
    ]


@dataclass(frozen=True, slots=True)
class PreparedQuery:
    own: list[str]
    weights: dict[str, float]
    unknown: list[str]
    spans: int
    average_length: float
    frequencies: dict[str, int]
    text: str | None = None
    """The question as asked, for an engine's language-aware re-ranker (Azure AI Search's semantic ranker)."""


async def lexical_ranking(
    engine: SearchEngine,
    organization: str,
    targets: Sequence[Target],
    query: str,
    pool: int,
    prepared: PreparedQuery | None = None,
) -> tuple[list[RankedSpan], int]:
    """The lexical ranking of ``targets`` (``pool`` long at most) and the rounds it took (``prepared``: the
    query's terms and statistics, when they were read already)."""
    if prepared is None:
        prepared = await prepare_query(engine, organization, query)
    if prepared is None:
        return [], 1
    by_id = {target.document_id: target for target in targets}
    where = search_filter(organization, targets)
    ranked = await _ranked(engine, where, by_id, prepared, pool) if prepared.weights else []
    unknown = prepared.unknown
    if unknown and (not ranked or len(unknown) * 2 >= len(prepared.own)):
        # Weak evidence: the documents do not use the query's words. One more round, with their own words
        # for it (close spellings, shared stems); kept only when it finds something.
        alternative = await _reformulated(engine, organization, prepared)
        if alternative:
            again = await prepare_query(engine, organization, " ".join(alternative), expand=False)
            if again is not None and again.weights:
                found = await _ranked(engine, where, by_id, again, pool)
                return (found or ranked), 2
    return ranked, 1


async def prepare_query(
    engine: SearchEngine, organization: str, query: str, *, expand: bool = True
) -> PreparedQuery | None:
    """The weighted terms of ``query`` and the corpus statistics of them; None when it has no term at all."""
    asked, suffix = split_context(query)
    own = list(dict.fromkeys(tokenize(asked)))
    if not own and not suffix:
        return None
    weights = {term: 1.0 for term in own}
    for term in tokenize(" ".join(suffix)):
        weights.setdefault(term, CONTEXT_WEIGHT)
    related = {term: related_terms(term) for term in own} if expand else {}
    asked_terms = [*weights, *(other for others in related.values() for other in others)]
    statistics = await engine.statistics(organization, asked_terms)
    known = statistics.frequencies
    unknown = [term for term in own if term not in known]
    for term in unknown:
        for other in related.get(term, ()):
            if other in known:
                weights.setdefault(other, RELATED_WEIGHT)
    # A term no span holds cannot score: it is kept out of the query (it still counts in the coverage's idf).
    present = {term: weight for term, weight in weights.items() if term in known}
    return PreparedQuery(
        own=own,
        weights=present,
        unknown=unknown,
        spans=statistics.spans,
        average_length=statistics.average_length,
        frequencies=dict(known),
        text=asked or None,
    )


def _idf(frequency: int, spans: int) -> float:
    """Lucene's idf (a term found nowhere weighs as if found once: it may be the user's word for the text's)."""
    found = max(frequency, 1)
    return math.log((max(spans, 1) - found + 0.5) / (found + 0.5) + 1.0)


async def _ranked(
    engine: SearchEngine,
    where: SearchFilter,
    targets: Mapping[str, Target],
    query: PreparedQuery,
    pool: int,
) -> list[RankedSpan]:
    """BM25 from the engine, then feedback and the sentence-level re-rank over the first candidates."""
    hits = await engine.search(
        SearchRequest(filter=where, limit=pool, terms=query.weights, title_weight=TITLE_WEIGHT, text=query.text)
    )
    candidates = [
        _Candidate(hit, target, hit.score * target.weight)
        for hit in hits
        if (target := targets.get(hit.document_id)) is not None and hit.version == target.version
    ]
    if not candidates:
        return []
    candidates.sort(key=_order)
    head = candidates[:RERANK_DEPTH]
    for candidate in head:
        candidate.tokenized()
    await _feedback(engine, where.organization, head, query)
    head.sort(key=_order)
    idf = {term: _idf(query.frequencies.get(term, 0), query.spans) for term in (query.own or list(query.weights))}
    top = head[0].score or 1.0
    for candidate in head:
        candidate.score = candidate.score / top + RERANK_WEIGHT * _coverage(idf, candidate)
    for candidate in candidates[RERANK_DEPTH:]:
        candidate.score = candidate.score / top
    candidates.sort(key=_order)
    return [RankedSpan(candidate.target, candidate.hit.span, round(candidate.score, 4)) for candidate in candidates]


def _order(candidate: _Candidate) -> tuple[float, str, int]:
    return (-candidate.score, candidate.hit.document_id, candidate.hit.span.ordinal)


async def _feedback(engine: SearchEngine, organization: str, head: list[_Candidate], query: PreparedQuery) -> None:
    """Pseudo-relevance feedback: terms shared by at least two of the best spans (and rare in the corpus) add
    their BM25, at :data:`FEEDBACK_WEIGHT`, to every candidate of ``head`` that holds them."""
    best = head[:FEEDBACK_SPANS]
    if len(best) < 2:
        return
    shared: Counter[str] = Counter()
    for candidate in best:
        assert candidate.sentences is not None
        shared.update(set().union(*candidate.sentences) - set(query.weights) if candidate.sentences else set())
    terms = [term for term, count in shared.items() if count >= 2]
    if not terms:
        return
    statistics = await engine.statistics(organization, terms)
    idf = {term: _idf(statistics.frequencies.get(term, 0), statistics.spans) for term in terms}
    chosen = sorted(terms, key=lambda term: (-shared[term] * idf[term], term))[:FEEDBACK_TERMS]
    average = max(statistics.average_length, 1.0)
    for candidate in head:
        assert candidate.tokens is not None
        counts = Counter(candidate.tokens)
        length = len(candidate.tokens)
        bonus = 0.0
        for term in chosen:
            frequency = counts.get(term, 0)
            if frequency:
                norm = frequency + K1 * (1.0 - B + B * length / average)
                bonus += idf[term] * frequency * (K1 + 1.0) / norm
        candidate.score += FEEDBACK_WEIGHT * bonus * candidate.target.weight


def _coverage(idf: Mapping[str, float], candidate: _Candidate) -> float:
    """The best idf-weighted share of the query terms one sentence of the span holds, its section title counting
    as part of every sentence and its neighbours for :data:`NEIGHBOUR_CREDIT`."""
    total = sum(idf.values())
    sentences = candidate.sentences or []
    if not total or not sentences:
        return 0.0
    span = candidate.hit.span
    title = frozenset(span.title_terms or (tokenize(span.section) if span.section else ()))
    best = 0.0
    for index, terms in enumerate(sentences):
        nearby = frozenset().union(*sentences[max(index - 1, 0) : index], *sentences[index + 1 : index + 2])
        value = 0.0
        for term, weight in idf.items():
            if term in terms or term in title:
                value += weight
            elif term in nearby:
                value += weight * NEIGHBOUR_CREDIT
        best = max(best, value)
    return best / total


async def _reformulated(engine: SearchEngine, organization: str, query: PreparedQuery) -> list[str]:
    """The query with every unknown term replaced by the corpus's terms closest to it (close spellings, shared
    stems); ``[]`` when no unknown term has a stand-in (another round would find the same)."""
    known = [term for term in query.own if term in query.frequencies]
    alternatives: list[str] = []
    for term in query.unknown:
        vocabulary = await engine.vocabulary(organization, term[:2], VOCABULARY_LIMIT)
        found = difflib.get_close_matches(term, vocabulary, n=MAX_ALTERNATIVES, cutoff=CLOSE_SPELLING)
        if len(term) >= PREFIX:
            stem = term[:PREFIX]
            found += [word for word in vocabulary if word.startswith(stem) and word not in found]
        alternatives += [word for word in found[:MAX_ALTERNATIVES] if word not in alternatives]
    return [*known, *alternatives] if alternatives else []
