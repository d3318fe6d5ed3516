"""Text from files that do not become catalog documents — what a user supplies to a paused turn's context
request (the supply multipart, the terminal's file path) — through the same intake as every upload: the same
name, size and media checks (:func:`~orc.documents.intake.uploads.check_uploads`), the same upload window
(admitted as a ``supply``: :func:`~orc.documents.intake.uploads.uploading`) and the same extraction pool
(configured limits, memory cap, deadline, organizations' turns). Nothing is parsed in the serving process
beyond what the pool itself keeps there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from orc.admission import UNLIMITED, Admission
from orc.documents.intake.uploads import Upload, check_uploads, uploading
from orc.documents.parsing.extraction_pool import ExtractionPool
from orc.principal import Principal

__all__ = ["FileText", "FileTexts"]


@dataclass(frozen=True, slots=True)
class FileText:
    """The text of one file, by its name."""

    filename: str
    text: str


class FileTexts:
    """Reads the text of files that are checked, admitted and parsed like uploads, but not stored."""

    def __init__(self, pool: ExtractionPool, *, max_upload_bytes: int, admission: Admission = UNLIMITED) -> None:
        self._pool = pool
        self._max_upload_bytes = max_upload_bytes
        self._admission = admission

    @property
    def max_upload_bytes(self) -> int:
        """The largest file accepted (the upload limit)."""
        return self._max_upload_bytes

    async def read(self, principal: Principal, uploads: Sequence[Upload]) -> list[FileText]:
        """Each file's text, in order. Refused whole before any parse when a file is bad (400 ``invalid_name``,
        ``empty_file``, 413, 415) or the principal's upload window is full (429 ``upload_limit``); a file that
        fails to parse raises its :class:`~orc.errors.ExtractionError` (422: ``decompression_limit``,
        ``text_limit``, ``extraction_memory``, ``extraction_timeout``, ``extraction_failed``)."""
        check_uploads(uploads, self._max_upload_bytes)
        texts = []
        async with uploading(self._admission, principal, uploads, "supply"):
            for upload in uploads:
                extracted = await self._pool.extract(
                    upload.data, upload.filename, upload.content_type, organization=principal.organization
                )
                texts.append(FileText(upload.filename, extracted.text))
        return texts
