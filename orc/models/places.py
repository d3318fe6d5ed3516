"""Places to look: when an answer declines, the passages that came closest, so the reader still knows where to read.

They are chosen among the spans the answer was given (what retrieval found for the question): first the span
whose sentence comes closest by the evidence the offline answerer weighs (:mod:`orc.models.evidence`), then the
others in retrieval's order; each span's closest sentence is its excerpt. Pure and deterministic: the same
question and spans give the same places, whatever model declined.
"""

from __future__ import annotations

from collections.abc import Sequence

from orc.contracts import PlaceToLook, SourceSpan
from orc.models.evidence import evidence, read_question, weights
from orc.models.passages import Passage, Source, passages

__all__ = ["MAX_PLACES", "places_to_look"]

MAX_PLACES = 3
"""Places listed under a decline: enough to choose from, few enough to read."""
EXCERPT_CHARS = 300
"""An excerpt longer than this is cut at a word and ends with …"""


def places_to_look(question: str, sources: Sequence[SourceSpan], limit: int = MAX_PLACES) -> list[PlaceToLook]:
    """The span of ``sources`` whose sentence comes closest to ``question``, then the others in retrieval's order,
    one place per span, at most ``limit``."""
    spans = [Source(ref=span.ref, page=span.page, text=span.text, section=span.section) for span in sources]
    by_span = [passages(span) for span in spans]
    read = read_question(question)
    found = [passage for group in by_span for passage in group]
    weighed = weights(read, found) if read.shape.terms else {}
    closest: list[tuple[float, int, Passage | None]] = []
    for order, group in enumerate(by_span):
        scored = [(evidence(read, weighed, passage), passage) for passage in group] if weighed else []
        best = max(scored, key=lambda item: item[0], default=(0.0, group[0] if group else None))
        closest.append((-best[0], order, best[1]))
    if not closest:
        return []
    # The span of the closest sentence first, then retrieval's best spans: retrieval weighs all of a span's words,
    # the evidence one sentence's, and retrieval's order finds the span holding the answer more often.
    first = min(closest, key=lambda item: item[:2])
    chosen = [first, *(item for item in closest if item is not first)][:limit]
    return [_place(sources[order], passage) for _, order, passage in chosen]


def _place(span: SourceSpan, passage: Passage | None) -> PlaceToLook:
    text = passage.text if passage is not None else " ".join(span.text.split())
    if len(text) > EXCERPT_CHARS:
        text = text[: EXCERPT_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return PlaceToLook(
        ref=span.ref,
        document=span.document,
        document_id=span.document_id,
        span_id=span.span_id,
        page=span.page,
        section=span.section,
        excerpt=text,
    )
