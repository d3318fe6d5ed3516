"""Extracted text and spans, persisted through the document-collection port (so every backend keeps them).

One processed version of a document is a few items in the ``document_text`` collection, in the same partition
as the document's catalog record: a head item (hashes, page lengths, span locators) and parts of at most
:data:`PART_CHARS` characters of text. Items are keyed by the document and the hash of the *content* they were
extracted from, so a re-upload writes a new version beside the old one and never rewrites what a reader may be
reading; the superseded version is deleted afterwards. No item comes near Cosmos DB's 2 MB cap.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from orc.extracted import ExtractedDocument
from orc.search.spans import CHUNKING_VERSION, Span, make_spans
from orc.storage.ports import DocumentCollection

PART_CHARS = 200_000
"""Characters of text per stored part: 200,000 characters stay under 2 MB of JSON even when escaped."""
_PREFIX = "tx:"


@dataclass(frozen=True, slots=True)
class VectorLocation:
    """The stored text version vectors are filed under."""

    partition_key: str
    document_id: str
    content_hash: str


@dataclass(frozen=True, slots=True)
class DocumentText:
    """A processed document: its pages, its spans and the hashes of DESIGN §3.

    ``text`` is the pages joined by blank lines; :meth:`span_offsets` gives each span's place in it, so a page of
    ``text`` can be mapped back to the spans (and SourceRefs) it covers.
    """

    pages: tuple[str, ...]
    spans: tuple[Span, ...]
    media_type: str
    extracted_text_hash: str
    spans_hash: str
    chunking_version: str
    extractors: tuple[str, ...] = ()
    """Per page, what produced its text (``pypdf``, ``pypdfium2``, …); empty for text stored before it was kept."""
    _page_starts: tuple[int, ...] = field(default=(), repr=False, compare=False)
    _span_starts: tuple[int, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        starts: list[int] = []
        cursor = 0
        for page in self.pages:
            starts.append(cursor)
            cursor += len(page) + len(PAGE_SEPARATOR)
        object.__setattr__(self, "_page_starts", tuple(starts))
        object.__setattr__(self, "_span_starts", tuple(self.span_offsets(index)[0] for index in range(len(self.spans))))

    @property
    def text(self) -> str:
        """All pages joined by blank lines."""
        return PAGE_SEPARATOR.join(self.pages)

    @property
    def total_chars(self) -> int:
        """Length of :attr:`text`."""
        return sum(len(page) for page in self.pages) + len(PAGE_SEPARATOR) * max(len(self.pages) - 1, 0)

    def page_range(self, index: int) -> tuple[int, int]:
        """``(start, end)`` of page ``index`` (0-based) in :attr:`text`."""
        start = self._page_starts[index]
        return start, start + len(self.pages[index])

    def span_offsets(self, index: int) -> tuple[int, int]:
        """``(start, end)`` of span ``index`` in :attr:`text`."""
        span = self.spans[index]
        page_index = (span.page - 1) if span.page else 0
        base = self._page_starts[page_index] if page_index < len(self._page_starts) else 0
        return base + span.start, base + span.end

    def spans_between(self, start: int, end: int) -> list[int]:
        """Indexes of the spans that overlap ``text[start:end]``, in document order."""
        first = max(bisect.bisect_right(self._span_starts, start) - 1, 0)
        found = []
        for index in range(first, len(self.spans)):
            span_start, span_end = self.span_offsets(index)
            if span_start >= end:
                break
            if span_end > start:
                found.append(index)
        return found


PAGE_SEPARATOR = "\n\n"


def text_hash(pages: Sequence[str]) -> str:
    """``extracted_text_hash``: sha256 of the extracted text, page boundaries included."""
    return hashlib.sha256(json.dumps(list(pages), ensure_ascii=False).encode()).hexdigest()


def spans_hash(spans: Sequence[Span]) -> str:
    """``spans_hash``: sha256 over the ordered ``(span_id, text)`` pairs (context-digest-spec §3.2)."""
    digest = hashlib.sha256()
    for span in spans:
        digest.update(span.span_id.encode())
        digest.update(b"\x1f")
        digest.update(span.text.encode())
        digest.update(b"\x1e")
    return digest.hexdigest()


def process_extracted(document: ExtractedDocument) -> DocumentText:
    """Spans and hashes of an extracted document (CPU-bound: run it in a thread for big documents)."""
    spans = make_spans(document)
    return DocumentText(
        pages=tuple(document.pages),
        spans=tuple(spans),
        media_type=document.media_type,
        extracted_text_hash=text_hash(document.pages),
        spans_hash=spans_hash(spans),
        chunking_version=CHUNKING_VERSION,
        extractors=document.extractors,
    )


def extractor_pages(extractors: Sequence[str]) -> dict[str, str]:
    """Which pages each extractor produced, compactly: ``{"pypdf": "1-3,5", "pypdfium2": "4"}``."""
    pages: dict[str, list[int]] = {}
    for number, name in enumerate(extractors, start=1):
        pages.setdefault(name, []).append(number)
    return {name: _ranges(numbers) for name, numbers in pages.items()}


def _ranges(numbers: list[int]) -> str:
    runs: list[list[int]] = []
    for number in numbers:
        if runs and runs[-1][1] == number - 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ",".join(f"{first}-{last}" if last > first else str(first) for first, last in runs)


def _page_extractors(compact: dict[str, str], page_count: int) -> tuple[str, ...]:
    """The per-page list :func:`extractor_pages` compacted (empty when it does not cover every page)."""
    found: dict[int, str] = {}
    for name, runs in compact.items():
        for run in runs.split(","):
            first, _, last = run.partition("-")
            for number in range(int(first), int(last or first) + 1):
                found[number] = name
    if sorted(found) != list(range(1, page_count + 1)):
        return ()
    return tuple(found[number] for number in range(1, page_count + 1))


def version_prefix(document_id: str, content_hash: str) -> str:
    """The id prefix of every item of one stored version: data filed under it (span vectors) shares the
    version's life, deleted with it by :meth:`TextStore.delete` and :meth:`TextStore.discard`."""
    return f"{_PREFIX}{document_id}:{content_hash[:24]}:"


class TextStore:
    """Saves, loads and deletes processed versions of documents in the ``document_text`` collection."""

    def __init__(self, collection: DocumentCollection) -> None:
        self._items = collection

    async def save(self, partition_key: str, document_id: str, content_hash: str, text: DocumentText) -> None:
        """Store ``text`` as the version of ``document_id`` extracted from ``content_hash`` (idempotent)."""
        joined = "".join(text.pages)
        parts = [joined[offset : offset + PART_CHARS] for offset in range(0, len(joined), PART_CHARS)] or [""]
        prefix = version_prefix(document_id, content_hash)
        sections = list(dict.fromkeys(span.section for span in text.spans if span.section))
        numbering = {section: number for number, section in enumerate(sections)}
        # Parts first, head last: a reader that finds the head finds every part it names.
        for number, part in enumerate(parts, start=1):
            body = {"kind": "document_text_part", "document_id": document_id, "part": number, "text": part}
            await self._items.upsert(partition_key, f"{prefix}{number:05d}", body)
        head: dict[str, Any] = {
            "kind": "document_text",
            "document_id": document_id,
            "content_hash": content_hash,
            "extracted_text_hash": text.extracted_text_hash,
            "spans_hash": text.spans_hash,
            "chunking_version": text.chunking_version,
            "media_type": text.media_type,
            "parts": len(parts),
            "page_lengths": [len(page) for page in text.pages],
            "extractors": extractor_pages(text.extractors),
            # A section path is shared by many spans: stored once, each span naming it by its position.
            "sections": sections,
            "spans": [
                [span.span_id, span.page, span.start, span.end, numbering.get(span.section or "", -1)]
                for span in text.spans
            ],
        }
        await self._items.upsert(partition_key, f"{prefix}00000", head)

    async def load(self, partition_key: str, document_id: str, content_hash: str) -> DocumentText | None:
        """The stored version, or ``None`` when it is missing or incomplete (e.g. still being written)."""
        found = await self._items.query(partition_key, id_prefix=version_prefix(document_id, content_hash))
        items = sorted(found, key=lambda item: item.id)
        if not items or items[0].body.get("kind") != "document_text":
            return None
        head = items[0].body
        # Other data filed under the version (span vectors) is not part of the text.
        parts = [item.body for item in items[1:] if item.body.get("kind") == "document_text_part"]
        if len(parts) != head["parts"] or [part["part"] for part in parts] != list(range(1, len(parts) + 1)):
            return None
        joined = "".join(part["text"] for part in parts)
        pages: list[str] = []
        cursor = 0
        for length in head["page_lengths"]:
            pages.append(joined[cursor : cursor + length])
            cursor += length
        sections: list[str] = head.get("sections", [])
        spans = tuple(
            Span(
                span_id=span_id,
                page=page,
                start=start,
                end=end,
                text=pages[(page - 1) if page else 0][start:end],
                section=sections[rest[0]] if rest and 0 <= rest[0] < len(sections) else None,
            )
            for span_id, page, start, end, *rest in head["spans"]
        )
        return DocumentText(
            pages=tuple(pages),
            spans=spans,
            media_type=head["media_type"],
            extracted_text_hash=head["extracted_text_hash"],
            spans_hash=head["spans_hash"],
            chunking_version=head["chunking_version"],
            extractors=_page_extractors(head.get("extractors") or {}, len(pages)),
        )

    async def delete(self, partition_key: str, document_id: str, *, keep_content_hash: str | None = None) -> None:
        """Delete every stored version of ``document_id`` except the one of ``keep_content_hash``."""
        keep = version_prefix(document_id, keep_content_hash) if keep_content_hash else None
        for item in await self._items.query(partition_key, id_prefix=f"{_PREFIX}{document_id}:"):
            if keep is None or not item.id.startswith(keep):
                await self._items.delete(partition_key, item.id)

    async def discard(self, partition_key: str, document_id: str, content_hash: str) -> None:
        """Delete the version of ``document_id`` extracted from ``content_hash`` (no error when missing)."""
        for item in await self._items.query(partition_key, id_prefix=version_prefix(document_id, content_hash)):
            await self._items.delete(partition_key, item.id)
