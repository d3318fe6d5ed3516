"""Which of a turn's attached files its answer cannot use, and why (named in the answer, never silently ignored).

A file whose processing failed has no text to search; one still being uploaded has no content yet. Both are left
out of the turn's document tools and reported in ``metadata.unavailable_documents`` and a note under the answer.
A file still ``processing`` is kept: ``document_chat`` reads it on demand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from orc.contracts import UnavailableDocument
from orc.documents.sessions import ContextFile


def unavailable_attachments(records: Sequence[ContextFile]) -> list[UnavailableDocument]:
    """The attached files (given as their records) that a turn cannot use."""
    unavailable = []
    for record in records:
        if record.status == "failed":
            reason = record.status_reason or "its text could not be extracted"
            unavailable.append(_unavailable(record, "failed", reason))
        elif record.status == "uploading":
            unavailable.append(_unavailable(record, "uploading", "its upload has not finished"))
    return unavailable


def unavailable_note(unavailable: Sequence[UnavailableDocument]) -> str:
    """The sentence under an answer that names the attached files it could not use."""
    if not unavailable:
        return ""
    parts = [f"{document.name} ({_said(document)})" for document in unavailable]
    return f"\n\n(Not used in this answer: {'; '.join(parts)}.)"


def _said(document: UnavailableDocument) -> str:
    if document.status == "failed":
        return f"processing failed: {document.reason.rstrip('.')}"
    return document.reason.rstrip(".")


def _unavailable(
    record: ContextFile, status: Literal["uploading", "processing", "failed"], reason: str
) -> UnavailableDocument:
    return UnavailableDocument(
        document_id=record.file_id,
        name=record.filename,
        status=status,
        reason=reason,
    )
