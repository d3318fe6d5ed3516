"""Spans: the citable pieces of a document, ``S1..Sn`` in document order, with page and offset locators.

A span is a paragraph-aware chunk of roughly 400-1200 characters. Chunks never cross a page, so a span's
``start``/``end`` are offsets into one page's text and ``text == pages[page - 1][start:end]``. Changing how
text is chunked changes what every ``S<n>`` points at: bump :data:`CHUNKING_VERSION` when you do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orc.documents.extraction import PDF, ExtractedDocument

CHUNKING_VERSION = "1"

MIN_CHARS = 400
TARGET_CHARS = 800
MAX_CHARS = 1200

# Boundaries to split an over-long piece at, from the most to the least natural.
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_SPLITTERS = (
    re.compile(r"\n+"),
    re.compile(r"(?<=[.!?;:])[\"')\]]*\s+"),
    re.compile(r"\s+"),
)


@dataclass(frozen=True, slots=True)
class Span:
    """One citable chunk of a document. ``page`` is 1-based for PDFs and ``None`` for unpaged formats."""

    span_id: str
    page: int | None
    start: int
    end: int
    text: str


def source_ref(filename: str, span_id: str) -> str:
    """The SourceRef of a span: ``<filename>::<span_id>``."""
    return f"{filename}::{span_id}"


def make_spans(document: ExtractedDocument) -> list[Span]:
    """Chunk every page of ``document`` into spans numbered ``S1..Sn`` across the whole document."""
    paged = document.media_type == PDF
    spans: list[Span] = []
    for page_number, page_text in enumerate(document.pages, start=1):
        for start, end in _chunks(page_text):
            spans.append(
                Span(
                    span_id=f"S{len(spans) + 1}",
                    page=page_number if paged else None,
                    start=start,
                    end=end,
                    text=page_text[start:end],
                )
            )
    return spans


def _chunks(text: str) -> list[tuple[int, int]]:
    """Offsets of the chunks of one page: small pieces packed together, big ones split."""
    pieces: list[tuple[int, int]] = []
    for start, end in _split(text, 0, len(text), _PARAGRAPH):
        if end - start <= MAX_CHARS:
            pieces.append((start, end))
        else:
            pieces.extend(_split_long(text, start, end, 0))

    chunks: list[tuple[int, int]] = []
    for start, end in pieces:
        if chunks:
            chunk_start, chunk_end = chunks[-1]
            merged = end - chunk_start
            # Fill up to the target; a chunk still under the minimum may grow up to the maximum.
            if merged <= TARGET_CHARS or (chunk_end - chunk_start < MIN_CHARS and merged <= MAX_CHARS):
                chunks[-1] = (chunk_start, end)
                continue
        chunks.append((start, end))
    # A short tail reads better as part of the chunk before it.
    if len(chunks) >= 2:
        (prev_start, _), (last_start, last_end) = chunks[-2], chunks[-1]
        if last_end - last_start < MIN_CHARS and last_end - prev_start <= MAX_CHARS:
            chunks[-2:] = [(prev_start, last_end)]
    return chunks


def _split_long(text: str, start: int, end: int, level: int) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into pieces of at most :data:`MAX_CHARS` at the most natural boundary."""
    if level == len(_SPLITTERS):
        # No boundary left (a very long word or token run): cut hard.
        return [
            piece
            for offset in range(start, end, MAX_CHARS)
            for piece in _trimmed(text, offset, min(offset + MAX_CHARS, end))
        ]
    pieces: list[tuple[int, int]] = []
    for piece_start, piece_end in _split(text, start, end, _SPLITTERS[level]):
        if piece_end - piece_start <= MAX_CHARS:
            pieces.append((piece_start, piece_end))
        else:
            pieces.extend(_split_long(text, piece_start, piece_end, level + 1))
    return pieces


def _split(text: str, start: int, end: int, boundary: re.Pattern[str]) -> list[tuple[int, int]]:
    """The non-blank pieces of ``text[start:end]`` between matches of ``boundary``, trimmed."""
    pieces: list[tuple[int, int]] = []
    cursor = start
    for match in boundary.finditer(text, start, end):
        # Cutting after the match keeps closing quotes with their sentence; trimming drops the white space.
        pieces.extend(_trimmed(text, cursor, match.end()))
        cursor = match.end()
    pieces.extend(_trimmed(text, cursor, end))
    return pieces


def _trimmed(text: str, start: int, end: int) -> list[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return [(start, end)] if end > start else []
