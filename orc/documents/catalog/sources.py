"""What the page shows when a citation is opened: a session document's text around a cited span, and its bytes.

The scope is the one the tools use for a conversation (:meth:`DocumentLibrary.resolve_scope` with the session and
its historical contexts), so a citation opens exactly when the turn that made it could have read the document. A
principal only ever finds its own session's documents and its organization's contexts; anything else is
``document_not_found`` (404), never "forbidden".
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, Field

from orc.documents.catalog.availability import Availability, AvailableDocument
from orc.documents.catalog.scopes import DocumentScopes
from orc.errors import InvalidInput, ItemNotFound, NotFound, NotReady
from orc.names import validate_identifier
from orc.principal import Principal
from orc.search.text_store import DocumentText, TextStore
from orc.storage.ports import BlobStore

UNPAGED_WINDOW_CHARS = 6_000
"""Characters shown around a span of an unpaged document (DOCX, text): enough context to read, small to send."""
_REF_SEPARATOR = "::"


class SourceView(BaseModel):
    """A cited span in its document: the text to show and where the quote is in it."""

    ref: str = Field(description="The SourceRef ``<document>::<span_id>``.")
    document_id: str
    filename: str
    media_type: str = Field(description="The extracted format (application/pdf, text/plain, …).")
    span_id: str
    page: int | None = Field(description="1-based page of a PDF; null for unpaged formats.")
    page_count: int
    text: str = Field(description="The page's text (PDF), else a window of the document's text around the span.")
    text_offset: int = Field(description="Where ``text`` starts in the document's whole extracted text.")
    highlight_start: int = Field(description="Start of the span in ``text``.")
    highlight_end: int = Field(description="End of the span in ``text``.")
    quote: str = Field(description="The span's text.")
    content_url: str = Field(description="The document's original bytes (preview or download).")


@dataclass(frozen=True, slots=True)
class DocumentBytes:
    """A document's original upload."""

    data: bytes
    filename: str
    content_type: str


def split_ref(ref: str) -> tuple[str, str]:
    """``("report.pdf", "S3")`` from ``report.pdf::S3`` (filenames may themselves contain ``::``)."""
    document, separator, span_id = ref.rpartition(_REF_SEPARATOR)
    if not separator or not document or not span_id:
        # No <placeholders>: every client would get them escaped as markup (&lt;document&gt;).
        raise InvalidInput(
            "ref must be a SourceRef: a document's name and a span id joined by '::' (lease.pdf::S3)",
            code="invalid_ref",
        )
    return document, span_id


async def _availability(scopes: DocumentScopes, principal: Principal, session_id: str) -> Availability:
    scope = await scopes.resolve(principal, session_id=session_id, include_historical=True)
    return await scopes.available(principal, scope)


def _not_found(what: str) -> NotFound:
    return NotFound(f"no {what} is available in this conversation", code="document_not_found")


async def _text(texts: TextStore, document: AvailableDocument) -> DocumentText:
    if document.info.status != "ready":
        raise NotReady(f"{document.info.filename!r} is {document.info.status}; open it once it is ready")
    location = document.location
    text = await texts.load(location.partition_key, location.document_id, document.content_hash)
    if text is None:
        raise NotReady(f"the text of {document.info.filename!r} is being stored; retry shortly")
    return text


class DocumentSources:
    """The documents behind a conversation's citations: a cited span in its text, and a document's bytes."""

    def __init__(self, scopes: DocumentScopes, texts: TextStore, blobs: BlobStore) -> None:
        self._scopes = scopes
        self._texts = texts
        self._blobs = blobs

    async def view(self, principal: Principal, session_id: str, ref: str, content_url: str) -> SourceView:
        """The cited span ``ref`` of the conversation ``session_id``, with the text around it."""
        validate_identifier(session_id, what="session")
        name, span_id = split_ref(ref)
        availability = await _availability(self._scopes, principal, session_id)
        document = next((doc for doc in availability.documents if doc.ref_name == name), None)
        if document is None:
            raise _not_found(f"document {name!r}")
        return _view(ref, document, await _text(self._texts, document), span_id, content_url)

    async def content(self, principal: Principal, session_id: str, document_id: str) -> DocumentBytes:
        """The original bytes of a document available in the conversation ``session_id``."""
        validate_identifier(session_id, what="session")
        validate_identifier(document_id, what="document")
        document = (await _availability(self._scopes, principal, session_id)).find(document_id)
        if document is None:
            raise _not_found(f"document {document_id!r}")
        try:
            data, _ = await self._blobs.get(document.location.blob_path)
        except ItemNotFound as exc:
            raise _not_found(f"document {document_id!r}") from exc
        # The format extraction recognised is surer than what the uploader declared (often
        # application/octet-stream). Until extraction has run (a document still processing), the bytes themselves
        # say whether it is a PDF.
        content_type = document.info.media_type or (
            "application/pdf" if data.startswith(b"%PDF-") else document.content_type
        )
        return DocumentBytes(data=data, filename=document.info.filename, content_type=content_type)


def _view(ref: str, document: AvailableDocument, text: DocumentText, span_id: str, content_url: str) -> SourceView:
    name = document.ref_name
    position = next((index for index, span in enumerate(text.spans) if span.span_id == span_id), None)
    if position is None:
        raise NotFound(f"{name!r} has no span {span_id!r}", code="span_not_found")
    span = text.spans[position]
    start, end = text.span_offsets(position)
    if span.page is not None:
        window_start = start - span.start
        window = text.pages[span.page - 1]
    else:
        window_start = max(0, start - UNPAGED_WINDOW_CHARS // 2)
        whole = text.text
        window_end = min(len(whole), max(end, window_start + UNPAGED_WINDOW_CHARS))
        window = whole[window_start:window_end]
    return SourceView(
        ref=ref,
        document_id=document.info.document_id,
        filename=document.info.filename,
        media_type=text.media_type,
        span_id=span_id,
        page=span.page,
        page_count=len(text.pages),
        text=window,
        text_offset=window_start,
        highlight_start=start - window_start,
        highlight_end=end - window_start,
        quote=span.text,
        content_url=content_url.format(document_id=document.info.document_id),
    )
