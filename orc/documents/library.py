"""The document library: scopes, listing, analysis, content, summaries and search over available documents.

Every operation starts from :func:`orc.documents.availability.available_documents`: a document that the scope
does not make available does not exist for the caller (``not_found``, never "forbidden"). The tool access rules
of chat-tools-evolution are enforced here, not only suggested by the prompt: content and summaries of documents
that are not ready are refused with ``not_ready``, and long documents are served a page at a time with a hint.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from orc.clock import utc_now
from orc.conversations import ConversationRepository, FocusContext
from orc.documents.availability import Availability, AvailableDocument, DocumentScope, available_documents
from orc.documents.context_documents import ContextDocuments
from orc.documents.contexts import ContextDirectory, historical_from_turns
from orc.documents.processing import DocumentProcessor, ProcessingJob, ProcessingResult
from orc.documents.records import ContextRef, DocumentInfo
from orc.documents.results import (
    AnalyzeResult,
    ContentPage,
    ContextLabel,
    DocumentList,
    PendingDocument,
    SearchHit,
    SearchResults,
    SpanLocator,
)
from orc.documents.search import IndexCache, SpanIndex, bm25, build_index
from orc.documents.sessions import SessionFiles
from orc.documents.spans import CHUNKING_VERSION, source_ref
from orc.documents.summaries import DocumentSummary, NoSummaries, SummaryProvider
from orc.documents.text_store import TextStore
from orc.errors import InvalidInput, NotFound, NotReady, PayloadTooLarge
from orc.names import validate_identifier
from orc.principal import Principal
from orc.storage.ports import DocumentCollection, ETagMismatch

logger = logging.getLogger(__name__)

DEFAULT_LIST_LIMIT = 200
MAX_LIST_LIMIT = 1000
DEFAULT_PAGE_CHARS = 8_000
MAX_PAGE_CHARS = 20_000
SHORT_DOCUMENT_CHARS = 12_000
"""A document up to this long (about 3,000 tokens) is "short": reading it whole is fine."""
DEFAULT_SEARCH_LIMIT = 6
MAX_SEARCH_LIMIT = 20
MAX_QUERY_CHARS = 2_000
HISTORICAL_WEIGHT = 0.85
"""Search scores of historical documents are scaled down: the focus context comes first at equal relevance."""
ANALYZE_WAIT_SECONDS = 3.0
STALE_PROCESSING = timedelta(minutes=5)
"""A document ``processing`` this long without a job in this process is presumed orphaned (its process died)."""


class NoSummary(NotFound):
    """The document is ready but has no summary (digest) yet."""

    code = "no_summary"


class DocumentLibrary:
    """The services behind the ``documents.*`` tools and the context routes."""

    def __init__(
        self,
        *,
        catalog: DocumentCollection,
        directory: ContextDirectory,
        context_documents: ContextDocuments,
        session_files: SessionFiles,
        texts: TextStore,
        indexes: IndexCache,
        processor: DocumentProcessor,
        conversations: ConversationRepository,
        summaries: SummaryProvider | None = None,
        history_turns: int = 10,
    ) -> None:
        self._catalog = catalog
        self.directory = directory
        self.context_documents = context_documents
        self.session_files = session_files
        self._texts = texts
        self._indexes = indexes
        self._processor = processor
        self.conversations = conversations
        """The conversation store the library reads historical contexts from (shared with the orchestrator)."""
        self._summaries: SummaryProvider = summaries or NoSummaries()
        self._history_turns = history_turns

    @property
    def indexes(self) -> IndexCache:
        """The per-process cache of search indexes (derived data: clearing it only costs rebuilds)."""
        return self._indexes

    # -- scope and availability ------------------------------------------------------------------------------

    async def check_focus(self, principal: Principal, focus: FocusContext | None) -> ContextRef | None:
        """The focus as a :class:`ContextRef` once it is known to exist in the caller's organization."""
        if focus is None:
            return None
        ref = ContextRef.parse(focus.type, focus.id)
        await self.directory.get(principal, ref)
        return ref

    async def resolve_scope(
        self,
        principal: Principal,
        *,
        session_id: str | None = None,
        context_type: str | None = None,
        context_id: str | None = None,
        include_historical: bool = False,
    ) -> DocumentScope:
        """Validate scope arguments against ``principal`` and derive the historical contexts from stored history.

        Raises :class:`~orc.errors.InvalidInput` for incomplete or malformed arguments and :class:`NotFound`
        (``context_not_found``) for a context the caller's organization does not have.
        """
        if session_id is not None:
            validate_identifier(session_id, what="session")
        if (context_type is None) != (context_id is None):
            raise InvalidInput("give both context_type and context_id for a focus context, or neither")
        focus = None
        if context_type is not None and context_id is not None:
            focus = ContextRef.parse(context_type, context_id)
            await self.directory.get(principal, focus)
        if include_historical and session_id is None:
            raise InvalidInput("include_historical needs the session_id whose history names the contexts")
        historical: tuple[ContextRef, ...] = ()
        if include_historical and session_id is not None:
            turns = await self.conversations.recent_turns(principal, session_id, self._history_turns)
            historical = tuple(historical_from_turns(turns, focus))
        return DocumentScope(
            session_id=session_id, focus=focus, historical=historical, include_historical=include_historical
        )

    async def available(self, principal: Principal, scope: DocumentScope) -> Availability:
        """The documents ``scope`` makes available (see :mod:`orc.documents.availability`)."""
        return await available_documents(
            principal,
            scope,
            directory=self.directory,
            context_documents=self.context_documents,
            session_files=self.session_files,
        )

    async def _document(self, principal: Principal, scope: DocumentScope, document_id: str) -> AvailableDocument:
        validate_identifier(document_id, what="document")
        found = (await self.available(principal, scope)).find(document_id)
        if found is None:
            raise NotFound(
                f"no document {document_id!r} is available here; call documents.list for the available ones",
                code="document_not_found",
            )
        return found

    # -- tools -------------------------------------------------------------------------------------------------

    async def list_documents(
        self, principal: Principal, scope: DocumentScope, *, offset: int = 0, limit: int = DEFAULT_LIST_LIMIT
    ) -> DocumentList:
        """``documents.list``: one page of the available documents with their origin and status."""
        _check_range("offset", offset, 0, None)
        _check_range("limit", limit, 1, MAX_LIST_LIMIT)
        availability = await self.available(principal, scope)
        page = availability.documents[offset : offset + limit]
        total = len(availability.documents)
        return DocumentList(
            documents=[doc.info for doc in page],
            total=total,
            offset=offset,
            next_offset=offset + limit if offset + limit < total else None,
            session_id=scope.session_id,
            focus_context=ContextLabel(type=scope.focus.type, id=scope.focus.id) if scope.focus else None,
            historical_contexts=[ContextLabel(type=ref.type, id=ref.id) for ref in scope.historical]
            if scope.include_historical
            else [],
        )

    async def analyze(self, principal: Principal, scope: DocumentScope, document_id: str) -> AnalyzeResult:
        """``documents.analyze``: (re)start processing when it is needed, wait a little, report the status."""
        document = await self._document(principal, scope, document_id)
        info = document.info
        if not self._usable(document):
            job = self._processor.running(document.location)
            if job is None and (info.status == "failed" or self._orphaned(document)):
                job = await self._restart(document)
            if job is not None:
                await self._processor.wait([job], ANALYZE_WAIT_SECONDS)
            info = (await self._document(principal, scope, document_id)).info
        if info.status != "ready":
            return AnalyzeResult(
                document_id=info.document_id,
                filename=info.filename,
                status=info.status,
                status_reason=info.status_reason,
                message=_not_ready_message(info),
            )
        digest_status = await self._summaries.request(principal, document)
        summary = await self._summaries.summary(principal, document)
        if summary is not None:
            message = "The document is ready and its summary is included."
        elif digest_status in ("parsing", "stale"):
            message = (
                "The document is ready and its summary is being made: search it with documents.search meanwhile, "
                "or call documents.analyze again shortly for the summary."
            )
        else:
            message = (
                "The document is ready: search it with documents.search"
                + (
                    " or read it with documents.get_content"
                    if (info.token_estimate or 0) * 4 <= SHORT_DOCUMENT_CHARS
                    else ""
                )
                + ". No summary of it exists yet, so none is given here."
            )
        return AnalyzeResult(
            document_id=info.document_id,
            filename=info.filename,
            status=info.status,
            digest_status=digest_status,
            has_summary=summary is not None,
            summary=summary,
            message=message,
        )

    async def summary(self, principal: Principal, scope: DocumentScope, document_id: str) -> DocumentSummary:
        """``documents.get_summary``: the digest; ``not_ready`` before the document and its digest are ready,
        ``no_summary`` when no digest was asked for or it could not be made."""
        document = await self._document(principal, scope, document_id)
        if not self._usable(document):
            raise NotReady(_not_ready_message(document.info))
        summary = await self._summaries.summary(principal, document)
        if summary is None and document.info.digest_status in ("parsing", "stale"):
            raise NotReady(
                f"the summary of {document.info.filename!r} is being made; call documents.analyze to follow it, "
                "or use documents.search meanwhile"
            )
        if summary is None:
            raise NoSummary(
                f"{document.info.filename!r} has no summary yet; use documents.search or documents.get_content "
                "to read it instead"
            )
        return summary

    async def content(
        self,
        principal: Principal,
        scope: DocumentScope,
        document_id: str,
        *,
        offset: int = 0,
        limit: int = DEFAULT_PAGE_CHARS,
    ) -> ContentPage:
        """``documents.get_content``: ``limit`` characters of the extracted text from ``offset``."""
        _check_range("offset", offset, 0, None)
        _check_range("limit", limit, 1, MAX_PAGE_CHARS)
        document = await self._document(principal, scope, document_id)
        index = await self._index(document) if self._usable(document) else None
        if index is None:
            raise NotReady(_not_ready_message(document.info))
        text = index.text
        total = text.total_chars
        if offset > total:
            raise InvalidInput(f"offset {offset} is past the end of the text ({total} characters)")
        end = min(offset + limit, total)
        spans = [
            SpanLocator(
                ref=source_ref(document.ref_name, text.spans[position].span_id),
                span_id=text.spans[position].span_id,
                page=text.spans[position].page,
                start=text.span_offsets(position)[0],
                end=text.span_offsets(position)[1],
            )
            for position in text.spans_between(offset, end)
        ]
        hint = None
        if total > SHORT_DOCUMENT_CHARS:
            hint = (
                f"This document is long ({total} characters, about {(total + 3) // 4} tokens): prefer "
                "documents.search for specific questions"
                + (" or documents.get_summary for an overview" if document.info.has_summary else "")
                + "; continue with offset=next_offset only when you need the whole text."
            )
        return ContentPage(
            document_id=document.info.document_id,
            filename=document.info.filename,
            document=document.ref_name,
            text=text.text[offset:end],
            offset=offset,
            limit=limit,
            next_offset=end if end < total else None,
            total=total,
            spans=spans,
            hint=hint,
        )

    async def search(
        self,
        principal: Principal,
        scope: DocumentScope,
        query: str,
        *,
        limit: int = DEFAULT_SEARCH_LIMIT,
        document_ids: Sequence[str] | None = None,
    ) -> SearchResults:
        """``documents.search``: the best spans for ``query`` across the available (or the named) documents."""
        query = " ".join(query.split()) if isinstance(query, str) else ""
        if not query:
            raise InvalidInput("query must not be empty")
        if len(query) > MAX_QUERY_CHARS:
            raise PayloadTooLarge(f"query is longer than {MAX_QUERY_CHARS} characters; shorten it")
        _check_range("limit", limit, 1, MAX_SEARCH_LIMIT)
        availability = await self.available(principal, scope)
        documents = list(availability.documents)
        if document_ids:
            documents = []
            for document_id in dict.fromkeys(document_ids):
                found = availability.find(validate_identifier(document_id, what="document"))
                if found is None:
                    raise NotFound(
                        f"no document {document_id!r} is available here; call documents.list", code="document_not_found"
                    )
                documents.append(found)
        searchable: list[tuple[AvailableDocument, SpanIndex]] = []
        pending: list[PendingDocument] = []
        indexes = await asyncio.gather(*(self._index(doc) if self._usable(doc) else _none() for doc in documents))
        for document, index in zip(documents, indexes, strict=True):
            if index is not None:
                searchable.append((document, index))
                continue
            if self._orphaned(document) or self._usable(document):
                # Stranded or stored before this process could read it: put it back in the pipeline.
                await self._restart(document)
            pending.append(
                PendingDocument(
                    document_id=document.info.document_id,
                    filename=document.info.filename,
                    status="processing" if document.info.status == "ready" else document.info.status,
                    status_reason=document.info.status_reason,
                )
            )
        weights = [HISTORICAL_WEIGHT if doc.info.origin == "historical" else 1.0 for doc, _ in searchable]
        hits = bm25(query, [index for _, index in searchable], weights, limit)
        results = [_hit(searchable[hit.document][0], searchable[hit.document][1], hit.span, hit.score) for hit in hits]
        return SearchResults(
            query=query,
            results=results,
            searched_documents=len(searchable),
            not_ready=pending,
            message=_search_message(len(results), len(searchable), pending),
        )

    # -- processing helpers -------------------------------------------------------------------------------------

    @staticmethod
    def _usable(document: AvailableDocument) -> bool:
        """Ready, with text extracted by the current chunker (an older chunking means reprocessing)."""
        return (
            document.info.status == "ready"
            and document.extracted_text_hash is not None
            and document.chunking_version == CHUNKING_VERSION
        )

    def _orphaned(self, document: AvailableDocument) -> bool:
        info = document.info
        if info.status == "ready":
            return not self._usable(document)
        if info.status not in ("uploading", "processing") or self._processor.running(document.location):
            return False
        try:
            updated = datetime.fromisoformat(info.updated_at)
        except ValueError:
            return True
        if updated.tzinfo is None:
            updated = updated.replace(tzinfo=UTC)
        return datetime.now(UTC) - updated > STALE_PROCESSING

    async def _index(self, document: AvailableDocument) -> SpanIndex | None:
        """The document's search index: from the process cache, else rebuilt from the stored text."""
        assert document.extracted_text_hash is not None and document.chunking_version is not None
        cached = self._indexes.get((document.extracted_text_hash, document.chunking_version))
        if cached is not None:
            return cached
        location = document.location
        text = await self._texts.load(location.partition_key, location.document_id, document.content_hash)
        if text is None or text.extracted_text_hash != document.extracted_text_hash:
            return None
        index = await asyncio.to_thread(build_index, text)
        self._indexes.put(index)
        return index

    async def _restart(self, document: AvailableDocument) -> asyncio.Task[ProcessingResult] | None:
        """Mark the document ``processing`` again and submit it; ``None`` when the record changed meanwhile."""
        running = self._processor.running(document.location)
        if running is not None:
            return running
        location = document.location
        item = await self._catalog.get(location.partition_key, location.item_id)
        if item is None or item.body.get("content_hash") != document.content_hash:
            return None
        body = {**item.body, "status": "processing", "status_reason": None, "updated_at": utc_now()}
        try:
            await self._catalog.replace(location.partition_key, location.item_id, body, if_match=item.etag)
        except ETagMismatch:
            return self._processor.running(location)
        logger.info("reprocessing document %s", location.document_id)
        content_type = None if document.content_type == "application/octet-stream" else document.content_type
        return self._processor.submit(ProcessingJob(location, document.content_hash, content_type))


async def _none() -> None:
    return None


def _check_range(name: str, value: int, minimum: int, maximum: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise InvalidInput(f"{name} must be {bound} (got {value})", code="invalid_range")


def _not_ready_message(info: DocumentInfo) -> str:
    if info.status == "failed":
        reason = info.status_reason or "processing failed"
        return f"{info.filename!r} could not be processed: {reason}"
    return (
        f"{info.filename!r} is still {info.status}; call documents.analyze to follow its processing and retry "
        "when it is ready"
    )


def _hit(document: AvailableDocument, index: SpanIndex, position: int, score: float) -> SearchHit:
    span = index.text.spans[position]
    start, end = index.text.span_offsets(position)
    info = document.info
    return SearchHit(
        ref=source_ref(document.ref_name, span.span_id),
        document=document.ref_name,
        document_id=info.document_id,
        filename=info.filename,
        span_id=span.span_id,
        page=span.page,
        locator=f"page {span.page}" if span.page is not None else f"characters {start}-{end}",
        text=span.text,
        score=score,
        context_type=info.context_type,
        context_id=info.context_id,
        origin=info.origin,
    )


def _search_message(found: int, searched: int, pending: Sequence[PendingDocument]) -> str:
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
