"""What the document tools return (MCP structured content): wire contracts, field names kept stable."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orc.contracts import RetrievalLegs
from orc.documents.catalog.summaries import DocumentSummary
from orc.documents.records import ContextType, DigestErrorCode, DigestStatus, DocumentInfo, DocumentStatus, Origin


class ContextLabel(BaseModel):
    """A context by type and id."""

    type: ContextType
    id: str


class DocumentList(BaseModel):
    """``documents.list``: the documents available to the scope, session documents first, focus context next."""

    documents: list[DocumentInfo]
    total: int = Field(description="How many documents are available in all (this page may hold fewer).")
    offset: int
    next_offset: int | None = Field(description="Pass as offset for the next page; null on the last page.")
    session_id: str | None = None
    focus_context: ContextLabel | None = None
    historical_contexts: list[ContextLabel] = Field(default_factory=list)


class AnalyzeResult(BaseModel):
    """``documents.analyze``: the document's processing status and, once a digest exists, its summary."""

    document_id: str
    filename: str
    status: DocumentStatus
    status_reason: str | None = None
    digest_status: DigestStatus = "none"
    digest_error_code: DigestErrorCode | None = Field(
        default=None,
        description="Why the summary could not be made, as a stable code: too_long and not_extracted mean this "
        "content will never have one; text_unavailable, model_failed and invalid_digest may succeed on a retry.",
    )
    has_summary: bool = False
    summary: DocumentSummary | None = None
    message: str = Field(description="What the status means and what to do next.")


class SpanLocator(BaseModel):
    """A span inside a page of content: its SourceRef and where it sits in the document's text."""

    ref: str
    span_id: str
    page: int | None = None
    start: int = Field(description="Offset of the span's first character in the document's text.")
    end: int


class ContentPage(BaseModel):
    """``documents.get_content``: one page of a document's extracted text."""

    document_id: str
    filename: str
    document: str = Field(description="The name SourceRefs use for this document.")
    text: str
    offset: int
    limit: int
    next_offset: int | None = Field(description="Pass as offset for the next page; null on the last page.")
    total: int = Field(description="Length of the document's text in characters.")
    spans: list[SpanLocator] = Field(default_factory=list, description="The spans this page overlaps.")
    hint: str | None = None


class PageContent(BaseModel):
    """``documents.get_page``: one page of a paged document (a PDF) with the spans on it."""

    document_id: str
    filename: str
    document: str = Field(description="The name SourceRefs use for this document.")
    page: int = Field(description="1-based page number.")
    page_count: int
    text: str
    offset: int = Field(description="Where the page starts in the document's text (span offsets are in it).")
    spans: list[SpanLocator] = Field(default_factory=list, description="The spans on this page.")


class SpanText(BaseModel):
    """A span's text with its SourceRef and place."""

    ref: str
    span_id: str
    page: int | None = None
    start: int
    end: int
    text: str
    section: str | None = Field(default=None, description="Title path of the span's section, when it has one.")


class SpanContent(BaseModel):
    """``documents.get_span``: the span a SourceRef names."""

    document_id: str
    filename: str
    document: str = Field(description="The name SourceRefs use for this document.")
    spans: list[SpanText] = Field(description="The one span named (a list, like search results).")


class SearchHit(BaseModel):
    """One span found by ``documents.search``, with its SourceRef and locator."""

    ref: str = Field(description="SourceRef <filename>::<span_id>; cite it as [ref].")
    document: str = Field(description="The name the SourceRef uses.")
    document_id: str
    filename: str
    span_id: str
    page: int | None = None
    locator: str = Field(description="Where the span is: a page, or a character range of the text.")
    section: str | None = Field(
        default=None, description="Title path of the section the span is in (``Setup › Requirements``), if any."
    )
    text: str
    score: float
    context_type: str
    context_id: str
    origin: Origin | None = None


class PendingDocument(BaseModel):
    """An available document that could not be searched because it is not ready."""

    document_id: str
    filename: str
    status: DocumentStatus
    status_reason: str | None = None


class SearchResults(BaseModel):
    """``documents.search``: ranked spans across the available documents."""

    query: str
    results: list[SearchHit]
    searched_documents: int
    not_ready: list[PendingDocument] = Field(default_factory=list)
    message: str
    retrieval: RetrievalLegs | None = Field(default=None, description="Which retrieval legs ran.")
