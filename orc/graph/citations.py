"""Citations: find the ``[<filename>::<span_id>]`` markers in an answer and resolve them to real spans.

A marker that names no span the turn actually retrieved is dropped: a citation must point at real text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from orc.contracts import Citation, SourceSpan
from orc.text import rank, split_sentences

_MARKER = re.compile(r"\[([^\[\]]*?::[^\[\]]*?)\]")
_SPLIT_REFS = re.compile(r"\s*[;,]\s*(?=[^;,]*::)")
MAX_QUOTE_CHARS = 400


def _quote(claim: str, span: SourceSpan) -> str:
    """The sentence of the span that best supports ``claim`` (the span's opening when none stands out)."""
    sentences = split_sentences(span.text)
    best = rank(claim, sentences, limit=1) if claim else []
    quote = sentences[best[0].index] if best else span.text.strip()
    return quote if len(quote) <= MAX_QUOTE_CHARS else quote[: MAX_QUOTE_CHARS - 1].rstrip() + "…"


def extract_citations(answer: str, sources: Iterable[SourceSpan]) -> list[Citation]:
    """Citations in order of first mention, one per distinct span."""
    by_ref = {source.ref: source for source in sources}
    citations: list[Citation] = []
    seen: set[str] = set()
    last_end = 0
    for match in _MARKER.finditer(answer):
        claim = answer[last_end : match.start()]
        last_end = match.end()
        for ref in _SPLIT_REFS.split(match.group(1).strip()):
            span = by_ref.get(ref.strip())
            if span is None or span.ref in seen:
                continue
            seen.add(span.ref)
            citations.append(
                Citation(
                    ref=span.ref,
                    document=span.document,
                    span_id=span.span_id,
                    page=span.page,
                    quote=_quote(claim.strip(), span),
                )
            )
    return citations


def unique_sources(sources: Iterable[SourceSpan], limit: int) -> list[SourceSpan]:
    """Sources without repeats (first occurrence wins), at most ``limit``."""
    result: list[SourceSpan] = []
    seen: set[str] = set()
    for source in sources:
        if source.ref not in seen:
            seen.add(source.ref)
            result.append(source)
            if len(result) == limit:
                break
    return result
