"""Document services, in wings with one job each: ``parsing`` (bytes to text), ``intake`` (uploads, processing,
leases, recovery), ``catalog`` (contexts, availability, scopes, the document tools' library), ``chat``
(document_chat and its file cache) and ``sessions`` (a conversation's files); the catalog's records at the root.
Spans, stored text and search are :mod:`orc.search`'s. Import from the wings; the names below are the short list.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orc.documents.chat.document_chat import DocumentChatService
    from orc.documents.chat.file_cache import ProcessedFile, ProcessedFileCache
    from orc.documents.parsing.extraction import detect_media_type, extract
    from orc.errors import ExtractionError
    from orc.extracted import ExtractedDocument
    from orc.search.spans import CHUNKING_VERSION, Span, make_spans, source_ref

# Resolved on first use (PEP 562): importing any submodule runs this file, and document_chat pulls in the model
# clients, which read-only commands (`orc docs list`, `orc sessions list`) must not pay for.
_LAZY = {
    "DocumentChatService": "orc.documents.chat.document_chat",
    "ExtractedDocument": "orc.extracted",
    "detect_media_type": "orc.documents.parsing.extraction",
    "extract": "orc.documents.parsing.extraction",
    "ProcessedFile": "orc.documents.chat.file_cache",
    "ProcessedFileCache": "orc.documents.chat.file_cache",
    "CHUNKING_VERSION": "orc.search.spans",
    "Span": "orc.search.spans",
    "make_spans": "orc.search.spans",
    "source_ref": "orc.search.spans",
    "ExtractionError": "orc.errors",  # defined in the one error tree; re-exported beside extract()
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'orc.documents' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "CHUNKING_VERSION",
    "DocumentChatService",
    "ExtractedDocument",
    "ExtractionError",
    "ProcessedFile",
    "ProcessedFileCache",
    "Span",
    "detect_media_type",
    "extract",
    "make_spans",
    "source_ref",
]
