"""Citations: find the ``[<filename>::<span_id>]`` markers in an answer and resolve them to real spans.

A marker that names no span the turn actually retrieved is dropped: a citation must point at real text.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from orc.contracts import Citation, SourceSpan
from orc.text import Postings, index_passages, rank_indexed, split_sentences, tokenize
from orc.text.markers import MARKER, marker_refs

MAX_QUOTE_CHARS = 1200
"""A span's largest size: a whole sentence is quoted whole."""
MIN_VERBATIM_WORDS = 4


def _quote(claim: str, span: SourceSpan) -> str:
    """The sentence of the span that ``claim`` quotes or, for a claim in the model's own words, the one that best
    supports it (the span's opening when none stands out)."""
    verbatim = _verbatim(claim, span.text)
    if verbatim is not None:
        return verbatim
    sentences, index = _sentences_of(span.text)
    best = rank_indexed(tokenize(claim), [index], limit=1) if claim and sentences else []
    quote = sentences[best[0].index] if best else span.text.strip()
    return quote if len(quote) <= MAX_QUOTE_CHARS else quote[: MAX_QUOTE_CHARS - 1].rstrip() + "…"


@lru_cache(maxsize=1024)
def _sentences_of(text: str) -> tuple[tuple[str, ...], Postings]:
    """A span's sentences and their BM25 index. A follow-up cites again what the answer before it cited, and a
    span's text is its own key, so what is kept can never be stale."""
    sentences = tuple(split_sentences(text))
    return sentences, index_passages([tokenize(sentence) for sentence in sentences])


def _verbatim(claim: str, text: str) -> str | None:
    """The claim's last sentence when the span holds it word for word (an extractive answer quotes whole
    sentences; the span's own sentence splitting may have cut them elsewhere)."""
    pieces = split_sentences(claim)
    sentence = " ".join(pieces[-1].split()) if pieces else ""
    if len(sentence.split()) < MIN_VERBATIM_WORDS or len(sentence) > MAX_QUOTE_CHARS:
        return None
    return sentence if sentence in " ".join(text.split()) else None


def extract_citations(answer: str, sources: Iterable[SourceSpan]) -> list[Citation]:
    """Citations in order of first mention, one per distinct span and quote (two sentences quoting one span are
    two citations)."""
    by_ref = {source.ref: source for source in sources}
    citations: list[Citation] = []
    seen: set[tuple[str, str]] = set()
    last_end = 0
    for match in MARKER.finditer(answer):
        claim = answer[last_end : match.start()]
        last_end = match.end()
        for ref in marker_refs(match.group(1)):
            span = by_ref.get(ref)
            if span is None:
                continue
            quote = _quote(claim.strip(), span)
            if (span.ref, quote) in seen:
                continue
            seen.add((span.ref, quote))
            citations.append(
                Citation(
                    ref=span.ref,
                    document=span.document,
                    document_id=span.document_id,
                    span_id=span.span_id,
                    page=span.page,
                    quote=quote,
                    section=span.section,
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
