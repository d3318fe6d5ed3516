"""What the document library says to its caller — a model through MCP, a person through the HTTP API — when a
document is not there, not ready, summarized or not, and what a search found: one place for the words that tell
the caller what to do next."""

from __future__ import annotations

from collections.abc import Sequence

from orc.documents.catalog.results import PendingDocument
from orc.documents.records import DigestStatus, DocumentInfo
from orc.errors import NotFound


def not_available(name: str) -> NotFound:
    """The error for a document the scope does not make available (``not_found``, never "forbidden")."""
    return NotFound(
        f"no document {name!r} is available here; call documents.list for the available ones",
        code="document_not_found",
    )


def not_ready_message(info: DocumentInfo) -> str:
    """Why a document cannot be read yet: it failed to process, or it is still being processed."""
    if info.status == "failed":
        reason = info.status_reason or "processing failed"
        return f"{info.filename!r} could not be processed: {reason}"
    return (
        f"{info.filename!r} is still {info.status}; call documents.analyze to follow its processing and retry "
        "when it is ready"
    )


def analyze_message(has_summary: bool, error_code: str | None, digest_status: DigestStatus, *, short: bool) -> str:
    """``documents.analyze``'s message for a ready document: its summary is included, will never exist (too long
    to summarize), is being made, or does not exist yet (and, for a ``short`` document, that reading it whole is
    fine)."""
    if has_summary:
        return "The document is ready and its summary is included."
    if error_code == "too_long":
        return (
            "The document is ready but too long to summarize, so it will have no summary: search it with "
            "documents.search, and answers quote the passages they need."
        )
    if digest_status in ("parsing", "stale"):
        return (
            "The document is ready and its summary is being made: search it with documents.search meanwhile, "
            "or call documents.analyze again shortly for the summary."
        )
    reading = " or read it with documents.get_content" if short else ""
    return (
        f"The document is ready: search it with documents.search{reading}. No summary of it exists yet, so none is "
        "given here."
    )


def search_message(found: int, searched: int, pending: Sequence[PendingDocument]) -> str:
    """What a search found, in how many documents, and which were not searched because they are not ready."""
    if searched == 0 and not pending:
        message = "No documents are available here: nothing was searched."
    elif found:
        message = f"{found} passage(s) from {searched} searched document(s); cite them by their ref."
    else:
        message = f"No passage of the {searched} searched document(s) matches the query."
    if pending:
        names = ", ".join(f"{doc.filename} ({doc.status})" for doc in pending)
        message += f" Not searched because not ready: {names}."
    return message
