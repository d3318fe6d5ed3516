"""Spans: the citable pieces of a document, ``S1..Sn`` in document order, with page and offset locators.

A span is a paragraph-aware chunk of roughly 400-1200 characters: whole paragraphs packed together, a long
paragraph cut at its sentences. A PDF's text has no blank lines between its paragraphs, so there a paragraph ends
where a line that ends a sentence stops well short of the page's measure, or where a list item, an indented block
or a short title line begins (:func:`pdf_paragraphs`) — never at a mere line end. Chunks never cross a page, so a span's
``start``/``end`` are offsets into one page's text and ``text == pages[page - 1][start:end]``. Chunks never cross
a heading either (:mod:`orc.search.sections`): a span belongs to one section and carries its title path in
``section`` (a heading with no text of its own before the next one joins that next section). A table row (a
``cell | cell`` line, a ``Row N:`` line) is never cut, and a table that fits
:data:`~orc.extracted.TABLE_CHARS` stays in one span with its header (a longer one names its
columns in every row). Changing how text is chunked changes what every ``S<n>`` points at: bump
:data:`CHUNKING_VERSION` when you do.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from orc.extracted import PDF, TABLE_CHARS, ExtractedDocument
from orc.search.sections import find_headings, section_path

CHUNKING_VERSION = "3"

MIN_CHARS = 400
TARGET_CHARS = 800
MAX_CHARS = 1200
ROW_CHARS = 4 * MAX_CHARS
"""A single table row up to this size is never cut; beyond it, it is cut like any text."""

# Boundaries to split an over-long piece at, from the most to the least natural.
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_SPLITTERS = (
    re.compile(r"\n+"),
    re.compile(r"(?<=[.!?;:])[\"')\]]*\s+"),
    re.compile(r"\s+"),
)
# A PDF's lines are where its layout wrapped them, not where its writer broke them: sentences before lines.
_PDF_SPLITTERS = (_SPLITTERS[1], _SPLITTERS[0], _SPLITTERS[2])
_LINE = re.compile(r"[^\n]*")
_SENTENCE_END = re.compile(r"[.!?:][\"'’”)\]]*$")
_ITEM = re.compile(r"\s*(?:[•●◦▪∗*–-]|\(?[0-9]{1,2}[.)]|\(?[a-z][.)])\s")
SHORT_LINE = 0.85
"""A PDF line that ends a sentence and is shorter than this share of the page's measure ends its paragraph."""


@dataclass(frozen=True, slots=True)
class Span:
    """One citable chunk of a document. ``page`` is 1-based for PDFs and ``None`` for unpaged formats;
    ``section`` is the title path of the section it is in (``Setup › Requirements``), None before any heading."""

    span_id: str
    page: int | None
    start: int
    end: int
    text: str
    section: str | None = None


def source_ref(filename: str, span_id: str) -> str:
    """The SourceRef of a span: ``<filename>::<span_id>``."""
    return f"{filename}::{span_id}"


def make_spans(document: ExtractedDocument) -> list[Span]:
    """Chunk every page of ``document`` into spans numbered ``S1..Sn`` across the whole document."""
    paged = document.media_type == PDF
    spans: list[Span] = []
    # The heading stack outlives a page: a PDF section goes on over the page break.
    titles: list[tuple[int, str]] = []
    for page_number, page_text in enumerate(document.pages, start=1):
        for part_start, part_end, section in _sections(page_text, document.media_type, titles):
            for start, end in _chunks(page_text, part_start, part_end, paged):
                spans.append(
                    Span(
                        span_id=f"S{len(spans) + 1}",
                        page=page_number if paged else None,
                        start=start,
                        end=end,
                        text=page_text[start:end],
                        section=section,
                    )
                )
    return spans


def _sections(text: str, media_type: str, titles: list[tuple[int, str]]) -> list[tuple[int, int, str | None]]:
    """``(start, end, section path)`` of the parts of a page between its headings; ``titles`` (the heading stack
    of the pages before) is updated in place. A heading with nothing under it before the next heading starts the
    next part instead of being a part of its own."""
    parts: list[tuple[int, int, str | None]] = []
    cursor = body = 0
    section = section_path(titles)
    for heading in find_headings(text, media_type):
        if text[body : heading.start].strip():
            parts.append((cursor, heading.start, section))
            cursor = heading.start
        body = heading.end
        while titles and titles[-1][0] >= heading.level:
            titles.pop()
        titles.append((heading.level, heading.title))
        section = section_path(titles)
    if text[cursor:].strip():
        parts.append((cursor, len(text), section))
    return parts


def _chunks(text: str, start: int, end: int, pdf: bool = False) -> list[tuple[int, int]]:
    """Offsets of the chunks of ``text[start:end]``: small pieces packed together, big ones split."""
    paragraphs = _split(text, start, end, _PARAGRAPH)
    if pdf:
        measure = _measure(text)
        paragraphs = [piece for start, end in paragraphs for piece in pdf_paragraphs(text, start, end, measure)]
    splitters = _PDF_SPLITTERS if pdf else _SPLITTERS
    pieces: list[tuple[int, int]] = []
    for piece_start, piece_end in paragraphs:
        if piece_end - piece_start <= MAX_CHARS or (
            piece_end - piece_start <= TABLE_CHARS and _is_table(text[piece_start:piece_end])
        ):
            pieces.append((piece_start, piece_end))
        else:
            pieces.extend(_split_long(text, piece_start, piece_end, 0, splitters))

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


def _split_long(
    text: str, start: int, end: int, level: int, splitters: tuple[re.Pattern[str], ...] = _SPLITTERS
) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into pieces of at most :data:`MAX_CHARS` at the most natural boundary."""
    if level == len(splitters):
        # No boundary left (a very long word or token run): cut hard.
        return [
            piece
            for offset in range(start, end, MAX_CHARS)
            for piece in _trimmed(text, offset, min(offset + MAX_CHARS, end))
        ]
    pieces: list[tuple[int, int]] = []
    for piece_start, piece_end in _split(text, start, end, splitters[level]):
        size = piece_end - piece_start
        if size <= MAX_CHARS or (size <= ROW_CHARS and _is_row(text[piece_start:piece_end])):
            pieces.append((piece_start, piece_end))
        else:
            pieces.extend(_split_long(text, piece_start, piece_end, level + 1, splitters))
    return pieces


def _measure(text: str) -> int:
    """The length of a full line of a PDF page's prose: the length most of its long lines reach."""
    lengths = sorted(len(line.rstrip()) for line in text.split("\n") if len(line.strip()) > 20)
    return lengths[int(len(lengths) * 0.8)] if lengths else 0


def pdf_paragraphs(text: str, start: int, end: int, measure: int | None = None) -> list[tuple[int, int]]:
    """The paragraphs of a PDF's ``text[start:end]``, whose lines are wrapped by its layout: a paragraph ends at a
    line that ends a sentence well short of the page's measure (:data:`SHORT_LINE`), before a list item, and
    where an indented block (code, a listing) begins or ends."""
    if measure is None:
        measure = _measure(text)
    lines = [(m.start(), m.end()) for m in _LINE.finditer(text, start, end) if m.end() > m.start()]
    breaks: list[int] = []
    for (line_start, line_end), (next_start, next_end) in itertools.pairwise(lines):
        line, following = text[line_start:line_end], text[next_start:next_end]
        ends = _SENTENCE_END.search(line.rstrip()) is not None
        short = len(line.rstrip()) < measure * SHORT_LINE
        indented, next_indented = line[:1].isspace(), following[:1].isspace()
        if (ends and short) or (ends and _ITEM.match(following)) or indented != next_indented:
            breaks.append(next_start)
    paragraphs: list[tuple[int, int]] = []
    cursor = start
    for cut in breaks:
        paragraphs.extend(_trimmed(text, cursor, cut))
        cursor = cut
    paragraphs.extend(_trimmed(text, cursor, end))
    return paragraphs


_ROW = re.compile(r"^(?:Row [0-9]+: |Columns: |.*\S \| \S)")


def _is_row(line: str) -> bool:
    """A table row as extraction writes them: ``cell | cell`` (DOCX, PPTX, HTML), ``Row N: …`` (CSV, XLSX)."""
    return "\n" not in line and _ROW.match(line) is not None


def _is_table(piece: str) -> bool:
    """A paragraph that is a table: every line of it is a row."""
    lines = piece.split("\n")
    return len(lines) > 1 and all(_is_row(line) for line in lines)


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
