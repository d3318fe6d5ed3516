"""What a retrieval ranks and returns: the documents it may search (:class:`Target`), the spans it found
(:class:`RankedSpan`, :class:`Retrieval`), the engine filter of a set of targets, and the fusion of rankings of
spans."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from orc.contracts import RetrievalLegs
from orc.search.fusion import HEAD_SLOTS, reciprocal_rank_fusion, with_leg_heads
from orc.search.port import IndexedSpan, ScopeFields, SearchFilter
from orc.search.spans import source_ref
from orc.search.text_store import DocumentText, VectorLocation

DOCUMENT_FILTER_LIMIT = 1000
"""Up to this many documents, the engine is asked for exactly them; beyond, for their owners (contexts), and the
hits of other documents are dropped here."""


@dataclass(frozen=True, slots=True)
class Target:
    """A document a retrieval may return spans of.

    ``version`` is what the caller holds current (:func:`~orc.search.port.index_version` of its record); hits of
    any other version are dropped. ``stored`` says where its text is stored, so the retriever can index it when
    the engine lacks it; ``text`` is a text that is not stored at all (ranked in memory for the call).
    """

    document_id: str
    name: str
    """The document's name in SourceRefs (``<name>::<span_id>``)."""
    version: str
    scope: ScopeFields
    weight: float = 1.0
    """Scores are multiplied by it (historical documents rank below the focus context at equal relevance)."""
    stored: VectorLocation | None = None
    text: DocumentText | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RankedSpan:
    """A span found for a query: its document, the span and its score (higher is better)."""

    target: Target
    span: IndexedSpan
    score: float

    @property
    def ref(self) -> str:
        """The span's SourceRef."""
        return source_ref(self.target.name, self.span.span_id)


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What a retrieval found, and how."""

    spans: list[RankedSpan]
    legs: RetrievalLegs
    rounds: int = 1
    """2 when the query's words were not in the documents and it was retrieved again with their spellings."""
    indexing: list[Target] = field(default_factory=list)
    """Documents not searched because they are being indexed now (in the background)."""
    unreadable: list[Target] = field(default_factory=list)
    """Documents not searched because their stored text could not be read (they need processing again)."""


def search_filter(organization: str, targets: Sequence[Target]) -> SearchFilter:
    owners = frozenset(target.scope.owner for target in targets)
    documents = frozenset(target.document_id for target in targets) if len(targets) <= DOCUMENT_FILTER_LIMIT else None
    return SearchFilter(organization=organization, owners=owners, documents=documents)


def fused_spans(rankings: Sequence[Sequence[RankedSpan]], limit: int, *, heads: bool = False) -> list[RankedSpan]:
    """Reciprocal rank fusion of rankings of spans (the score is then the RRF score). ``heads``: each ranking's
    best spans lead (:func:`~orc.search.fusion.with_leg_heads`), a span moved up scored as the best one it passed,
    so scores still fall with rank."""
    by_key: dict[tuple[str, int], RankedSpan] = {}
    for ranking in rankings:
        for ranked in ranking:
            by_key.setdefault((ranked.target.document_id, ranked.span.ordinal), ranked)
    keys = [[(ranked.target.document_id, ranked.span.ordinal) for ranked in ranking] for ranking in rankings]
    fused = reciprocal_rank_fusion(keys, len(by_key) if heads else limit)
    if heads:
        scores = dict(fused)
        order = with_leg_heads([key for key, _ in fused], keys, slots=min(HEAD_SLOTS, limit))[:limit]
        floor = [scores[key] for key in order]
        for index in range(len(floor) - 2, -1, -1):
            floor[index] = max(floor[index], floor[index + 1])
        fused = list(zip(order, floor, strict=True))
    return [RankedSpan(by_key[key].target, by_key[key].span, value) for key, value in fused]
