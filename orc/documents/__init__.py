"""Document services: extraction, spans, the processed-file cache and document_chat."""

from orc.documents.document_chat import DocumentChatService
from orc.documents.extraction import ExtractedDocument, ExtractionError, detect_media_type, extract
from orc.documents.file_cache import ProcessedFile, ProcessedFileCache
from orc.documents.spans import CHUNKING_VERSION, Span, make_spans, source_ref

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
