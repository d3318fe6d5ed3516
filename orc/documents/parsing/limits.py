"""Bounds on what extracting one document may cost: decompressed size and extracted characters.

A 1 MB ``.docx`` can expand to hundreds of megabytes of XML (a decompression bomb); a small PDF can hold huge
compressed streams; an HTML, CSV or JSON file within the upload limit can still yield more text than any answer
could use. Each is refused for that one document, with a reason that says which bound it crossed, before (for
archives) or right after (for text) the expensive part, so one file cannot take a process's memory.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from orc.errors import ExtractionError

DEFAULT_MAX_DECOMPRESSED_BYTES = 200 * 1024 * 1024
DEFAULT_MAX_EXTRACTED_CHARS = 10_000_000
MAX_COMPRESSION_RATIO = 200
"""A member that inflates more than this many times (and to more than a few MB) is a bomb, not a document."""
_RATIO_FLOOR = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ExtractionLimits:
    """The bounds of one document's extraction (``orc.composition.tuning.Tuning``)."""

    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES
    max_extracted_chars: int = DEFAULT_MAX_EXTRACTED_CHARS

    def check_archive(self, data: bytes, filename: str) -> None:
        """Refuse a zip-based document (DOCX, PPTX, XLSX) whose members would expand past the bound.

        The sizes a zip declares bound what Python's zipfile will inflate (it stops at the declared size and
        checks the CRC), so summing them before parsing is enough.
        """
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                members = archive.infolist()
        except (zipfile.BadZipFile, OSError, ValueError):
            return  # not a readable zip: the parser says it is damaged
        total = 0
        for member in members:
            total += member.file_size
            ratio = member.file_size / max(member.compress_size, 1)
            if member.file_size > _RATIO_FLOOR and ratio > MAX_COMPRESSION_RATIO:
                raise ExtractionError(
                    f"{filename!r} looks like a decompression bomb (a part expands {ratio:.0f} times); not read",
                    code="decompression_limit",
                )
        if total > self.max_decompressed_bytes:
            raise ExtractionError(
                f"{filename!r} expands to {total // (1024 * 1024)} MB, over the "
                f"{self.max_decompressed_bytes // (1024 * 1024)} MB limit for one document; not read",
                code="decompression_limit",
            )

    def check_text(self, chars: int, filename: str) -> None:
        """Refuse a document whose extracted text is longer than the bound."""
        if chars > self.max_extracted_chars:
            raise ExtractionError(
                f"{filename!r} has more than {self.max_extracted_chars:,} characters of text, over the limit for "
                "one document; split it into smaller files",
                code="text_limit",
            )


DEFAULT_LIMITS = ExtractionLimits()
