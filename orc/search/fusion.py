"""Fusing the lexical and the vector rankings into one: reciprocal rank fusion (Cormack et al., 2009).

RRF scores an item by ``Σ 1 / (k + rank)`` over the rankings it appears in. It reads ranks, not scores, so BM25's
unbounded scores and cosine similarities need no calibration against each other, and an item both legs rank
well beats one that only a single leg ranks first. ``bench/embeddings.py`` measures it against a min-max
normalized score blend on the project's question sets (figures in ``bench/README.md``).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

from orc.contracts import RetrievalLegs
from orc.search.port import SpanHit

K = TypeVar("K", bound=Hashable)

RRF_K = 60
"""The rank constant of the original paper and of Azure AI Search's hybrid queries."""

LEG_HEADS = 3
"""Each leg's first this many items are among the first :data:`HEAD_SLOTS` of the retriever's fusion."""
HEAD_SLOTS = 6
"""The head of a fused ranking that holds each leg's best items (the answer request's whole passages)."""

LEXICAL_ONLY = RetrievalLegs(legs=["lexical"])


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], limit: int, k: int = RRF_K) -> list[tuple[K, float]]:
    """The ``limit`` best items of ``rankings`` (each best first) by RRF score; ties keep the first ranking's
    order, then the next's."""
    scores: dict[K, float] = {}
    first_seen: dict[K, tuple[int, int]] = {}
    for leg, ranking in enumerate(rankings):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            first_seen.setdefault(item, (leg, rank))
    ordered = sorted(scores, key=lambda item: (-scores[item], first_seen[item]))
    return [(item, round(scores[item], 6)) for item in ordered[:limit]]


def with_leg_heads(
    fused: Sequence[K], rankings: Sequence[Sequence[K]], heads: int = LEG_HEADS, slots: int = HEAD_SLOTS
) -> list[K]:
    """``fused`` (best first) with the first ``heads`` items of every ranking among its first ``slots``: those
    items, and the best others up to ``slots``, in ``fused``'s order, then the rest. When they do not all fit, the
    rankings' firsts go before their seconds.

    RRF's rank constant makes its scores nearly flat over a short ranking — 1/61 for a leg's first item, 1/84
    for its 24th — so a span both legs rank 20th outscores one that a single leg ranks first. Measured on the
    finding sets (``bench/finding_hybrid.py``, figures in ``bench/README.md``), the span holding the answer was
    often one leg's first and the fusion's 7th to 10th: sent as an excerpt cut around the question's words,
    which a passage found by its meaning may not share, or past ``documents.search``'s first five."""
    wanted: list[K] = []
    for depth in range(heads):
        for ranking in rankings:
            if depth < len(ranking) and ranking[depth] not in wanted:
                wanted.append(ranking[depth])
    chosen = set(wanted[:slots])
    room = max(slots - len(chosen), 0)
    for item in fused:
        if room == 0:
            break
        if item not in chosen:
            chosen.add(item)
            room -= 1
    head = [item for item in fused if item in chosen]
    return [*head, *(item for item in fused if item not in chosen)]


def fused_hits(lexical: Sequence[SpanHit], vector: Sequence[SpanHit], limit: int) -> list[SpanHit]:
    """The ``limit`` best spans of a hybrid query's two legs by RRF, each with its fused score as its score."""
    by_key = {(hit.document_id, hit.span.ordinal): hit for hit in (*vector, *lexical)}
    fused = reciprocal_rank_fusion(
        [[(hit.document_id, hit.span.ordinal) for hit in leg] for leg in (lexical, vector)],
        limit,
    )
    return [SpanHit(by_key[key].document_id, by_key[key].version, by_key[key].span, value) for key, value in fused]
