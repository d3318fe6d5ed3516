"""Document services: extraction, spans, the processed-file cache and document_chat.

Contexts and their documents, the availability model, the processing pipeline, stored text, search and the
library behind the document tools live in the submodules (``contexts``, ``availability``, ``processing``,
``text_store``, ``search``, ``library``); import them from there.
"""

from orc.documents.document_chat import DocumentChatService
from orc.documents.extraction import ExtractedDocument, detect_media_type, extract
from orc.documents.file_cache import ProcessedFile, ProcessedFileCache
from orc.documents.spans import CHUNKING_VERSION, Span, make_spans, source_ref
from orc.errors import ExtractionError  # defined in the one error tree; re-exported beside extract()

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
