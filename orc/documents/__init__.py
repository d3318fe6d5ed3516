"""Document services: extraction, spans, the processed-file cache and document_chat.

Contexts and their documents, the availability model, the processing pipeline, stored text, search and the
library behind the document tools live in the submodules (``contexts``, ``availability``, ``processing``,
``text_store``, ``search``, ``library``); import them from there.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orc.documents.document_chat import DocumentChatService
    from orc.documents.extraction import ExtractedDocument, detect_media_type, extract
    from orc.documents.file_cache import ProcessedFile, ProcessedFileCache
    from orc.documents.spans import CHUNKING_VERSION, Span, make_spans, source_ref
    from orc.errors import ExtractionError

# Resolved on first use (PEP 562): importing any submodule runs this file, and document_chat pulls in the model
# clients, which read-only commands (`orc docs list`, `orc sessions list`) must not pay for.
_LAZY = {
    "DocumentChatService": "orc.documents.document_chat",
    "ExtractedDocument": "orc.documents.extraction",
    "detect_media_type": "orc.documents.extraction",
    "extract": "orc.documents.extraction",
    "ProcessedFile": "orc.documents.file_cache",
    "ProcessedFileCache": "orc.documents.file_cache",
    "CHUNKING_VERSION": "orc.documents.spans",
    "Span": "orc.documents.spans",
    "make_spans": "orc.documents.spans",
    "source_ref": "orc.documents.spans",
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
