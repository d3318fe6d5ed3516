"""The lexical leg of retrieval, made to survive paraphrase: fields, query expansion and a sentence-level re-rank.

A question in a user's own words shares few words with the sentence that answers it ("how wide" against "length
… characters"). Plain BM25 over span text then ranks loosely related spans first. Four things help, each cheap
and deterministic:

- **fields**: a span's section title is indexed apart from its text and scored with its own weight, so "the icon
  files" finds the spans under "2.7. The icon files" even where their text says "icons";
- **morphological variants**: Snowball stems join "install"/"installed"/"installing", and the related-terms
  table below holds derived forms ("wide" → "width") and irregular ones ("bigger" → "big");
- **pseudo-relevance feedback**: the terms that the first pass's best spans have in common (and the rest of the
  searched union has not) are added with a lower weight still, and the union is scored again;
- **a sentence-level re-rank** of the first spans: a span whose matching words sit together in one sentence (or
  a sentence and its neighbour) beats one whose words are spread over unrelated sentences.

- **related terms**: the stems WordNet relates to a query term (synonyms, derived forms: "sue" → "litigation",
  "bigger" → "larger"), from the table :mod:`orc.text.related` ships, when the searched documents use them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orc.text.bm25 import Postings, index_passages, score
from orc.text.related import related_terms
from orc.text.sentences import split_sentences
from orc.text.tokens import tokenize

TITLE_WEIGHT = 1.0
"""A title match counts for this share of a text match of the same term."""
RELATED_WEIGHT = 0.2
RELATED_UNKNOWN_ONLY = True
"""Weight of a term WordNet relates to a query term (a synonym, a derived form), when the documents use it."""
FEEDBACK_SPANS = 4
"""Best spans of the first pass that the feedback terms are taken from."""
FEEDBACK_TERMS = 6
FEEDBACK_WEIGHT = 0.25
RERANK_DEPTH = 24
"""Spans of the BM25 ranking that the sentence-level re-rank may reorder."""
RERANK_WEIGHT = 1.5
"""Weight of the best sentence window's coverage (0..1) against the span's BM25 score scaled to 0..1."""
CONTEXT_WEIGHT = 0.5
"""Weight of a term of a follow-up's ``(context: …)`` suffix: it says what the question is about, not what it asks."""
NEIGHBOUR_CREDIT = 0.5
"""A query term found in the next or previous sentence counts for this share in a sentence window."""


_CONTEXT_SUFFIX = re.compile(r"\s*\(context:\s*([^()]*)\)\s*$", re.IGNORECASE)


def split_context(query: str) -> tuple[str, list[str]]:
    """A query and the words of its closing ``(context: …)`` suffix (``[]`` when it has none)."""
    match = _CONTEXT_SUFFIX.search(query)
    if not match:
        return query.strip(), []
    return query[: match.start()].strip(), match.group(1).split()


@dataclass(frozen=True, slots=True)
class LexicalIndex:
    """The lexical index of a group of passages (one document's spans): text and title fields, and each passage's
    sentences as term sets."""

    body: Postings
    titles: Postings
    sentences: tuple[tuple[frozenset[str], ...], ...]
    """Each passage's sentences, as the sets of their terms."""
    title_terms: tuple[frozenset[str], ...]

    @property
    def size(self) -> int:
        """How many passages are indexed."""
        return self.body.size


def index_fields(passages: Sequence[str], titles: Sequence[str | None] | None = None) -> LexicalIndex:
    """Index ``passages`` and their section ``titles`` (one per passage, None when it has none)."""
    if titles is not None and len(titles) != len(passages):
        raise ValueError("one title per passage")
    body_tokens = [tokenize(passage) for passage in passages]
    title_tokens = [tokenize(title) if title else [] for title in (titles or [None] * len(passages))]
    sentences = tuple(
        tuple(frozenset(terms) for sentence in split_sentences(passage) if (terms := tokenize(sentence)))
        for passage in passages
    )
    return LexicalIndex(
        body=index_passages(body_tokens),
        titles=index_passages(title_tokens),
        sentences=sentences,
        title_terms=tuple(frozenset(tokens) for tokens in title_tokens),
    )


@dataclass(frozen=True, slots=True)
class Found:
    """A passage found: which group, which passage, its score and the share of the query it covers."""

    group: int
    passage: int
    score: float
    coverage: float
    """The idf-weighted share of the query's own terms that its best sentence window holds (0..1)."""


def search(
    query: str,
    groups: Sequence[LexicalIndex],
    weights: Sequence[float] | None = None,
    *,
    limit: int,
) -> list[Found]:
    """The ``limit`` best passages of ``groups`` for ``query``, best first (ties: earlier group, then passage).

    A ``(context: …)`` suffix (a follow-up's words from the previous exchange, see
    :func:`orc.models.rewriting.rewrite_follow_up`) weighs :data:`CONTEXT_WEIGHT` a term. Each group's scores are
    multiplied by its entry in ``weights`` (1 when ``None``).
    """
    if limit <= 0 or not groups:
        return []
    asked, suffix = split_context(query)
    own = list(dict.fromkeys(tokenize(asked)))
    if not own and not suffix:
        return []
    query_weights = {term: 1.0 for term in own}
    for term in tokenize(" ".join(suffix)):
        query_weights.setdefault(term, CONTEXT_WEIGHT)
    for term in own:
        if RELATED_UNKNOWN_ONLY and any(term in group.body.terms for group in groups):
            continue
        for other in related_terms(term):
            if any(other in group.body.terms or other in group.titles.terms for group in groups):
                query_weights.setdefault(other, RELATED_WEIGHT)
    first = _scores(query_weights, groups, weights)
    feedback = _feedback(first, groups, query_weights)
    if feedback:
        query_weights.update(feedback)
        first = _scores(query_weights, groups, weights)
    ranked = sorted(first.items(), key=lambda item: (-item[1], item[0]))[: max(RERANK_DEPTH, limit)]
    if not ranked:
        return []
    idf = _idf(own or list(query_weights), groups)
    top = ranked[0][1] or 1.0
    found = []
    for (group, passage), value in ranked[:RERANK_DEPTH]:
        coverage = _window_coverage(idf, groups[group], passage)
        found.append(Found(group, passage, value / top + RERANK_WEIGHT * coverage, coverage))
    found.sort(key=lambda item: (-item.score, item.group, item.passage))
    # A deep search (the answer's evidence) continues in BM25 order past the re-ranked head, so its first results
    # are those of a shallow one.
    found += [Found(group, passage, value / top, 0.0) for (group, passage), value in ranked[RERANK_DEPTH:]]
    return found[:limit]


def _scores(
    query_weights: Mapping[str, float], groups: Sequence[LexicalIndex], weights: Sequence[float] | None
) -> dict[tuple[int, int], float]:
    """BM25 of the text field plus :data:`TITLE_WEIGHT` × BM25 of the title field, per (group, passage)."""
    terms = list(query_weights)
    totals: dict[tuple[int, int], float] = {}
    for match in score(terms, [group.body for group in groups], weights, term_weights=query_weights):
        totals[(match.group, match.passage)] = match.score
    title_weights = [TITLE_WEIGHT * (1.0 if weights is None else weight) for weight in weights or [1.0] * len(groups)]
    for match in score(terms, [group.titles for group in groups], title_weights, term_weights=query_weights):
        key = (match.group, match.passage)
        totals[key] = totals.get(key, 0.0) + match.score
    return totals


def _idf(terms: Sequence[str], groups: Sequence[LexicalIndex]) -> dict[str, float]:
    """Lucene's idf of each term over the union of the groups' text fields (unknown terms weigh as if found once:
    they may be the user's word for what the text says otherwise)."""
    count = sum(group.size for group in groups) or 1
    result = {}
    for term in terms:
        found = max(sum(len(group.body.terms.get(term, ())) for group in groups), 1)
        result[term] = math.log((count - found + 0.5) / (found + 0.5) + 1.0)
    return result


def _feedback(
    first: Mapping[tuple[int, int], float], groups: Sequence[LexicalIndex], query_weights: Mapping[str, float]
) -> dict[str, float]:
    """Terms shared by at least two of the first pass's best spans, weighed by how rare they are elsewhere."""
    best = sorted(first.items(), key=lambda item: (-item[1], item[0]))[:FEEDBACK_SPANS]
    if len(best) < 2:
        return {}
    shared: Counter[str] = Counter()
    for (group, passage), _ in best:
        terms = set().union(*groups[group].sentences[passage]) if groups[group].sentences[passage] else set()
        shared.update(terms - set(query_weights))
    candidates = [term for term, count in shared.items() if count >= 2]
    if not candidates:
        return {}
    idf = _idf(candidates, groups)
    chosen = sorted(candidates, key=lambda term: (-shared[term] * idf[term], term))[:FEEDBACK_TERMS]
    return {term: FEEDBACK_WEIGHT for term in chosen}


def _window_coverage(idf: Mapping[str, float], group: LexicalIndex, passage: int) -> float:
    """The best idf-weighted share of the query terms that one sentence of the passage holds, its title counting
    as part of every sentence and its neighbours for :data:`NEIGHBOUR_CREDIT`."""
    total = sum(idf.values())
    if not total:
        return 0.0
    sentences = group.sentences[passage]
    title = group.title_terms[passage]
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
