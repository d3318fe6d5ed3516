"""The document library: listing, analysis, content, summaries and search over what a scope makes available.

Every operation starts from the scope's availability (:mod:`orc.documents.catalog.scopes`): a document that the scope
does not make available does not exist for the caller (``not_found``, never "forbidden"). The tool access rules
of chat-tools-evolution are enforced here, not only suggested by the prompt: content and summaries of documents
that are not ready are refused with ``not_ready``, and long documents are served a page at a time with a hint.
When to process a document again is the reprocessor's decision (:mod:`orc.documents.catalog.reprocessing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from orc.contracts import SourceSpan
from orc.documents.catalog.availability import AvailableDocument, DocumentScope
from orc.documents.catalog.messages import analyze_message, not_available, not_ready_message, search_message
from orc.documents.catalog.reprocessing import Reprocessor, usable
from orc.documents.catalog.results import (
    AnalyzeResult,
    ContentPage,
    ContextLabel,
    DocumentList,
    PageContent,
    PendingDocument,
    SearchHit,
    SearchResults,
    SpanContent,
    SpanLocator,
    SpanText,
)
from orc.documents.catalog.scopes import DocumentScopes
from orc.documents.catalog.summaries import (
    DocumentSummary,
    NoSummaries,
    SummaryProvider,
    SummaryWithSources,
    missing_digest,
)
from orc.documents.records import context_scope, session_scope
from orc.errors import InvalidInput, NoSummary, NotFound, NotReady, PayloadTooLarge
from orc.extracted import PDF
from orc.models.summaries import facts_of
from orc.names import validate_identifier
from orc.principal import Principal
from orc.search.port import ScopeFields, index_version
from orc.search.retriever import RankedSpan, Retriever, Target
from orc.search.spans import source_ref
from orc.search.text_store import DocumentText, TextStore, VectorLocation

DEFAULT_LIST_LIMIT = 200
MAX_LIST_LIMIT = 1000
DEFAULT_PAGE_CHARS = 8_000
MAX_PAGE_CHARS = 20_000
SHORT_DOCUMENT_CHARS = 12_000
"""A document up to this long (about 3,000 tokens) is "short": reading it whole is fine."""
DEFAULT_SEARCH_LIMIT = 10
MAX_SEARCH_LIMIT = 20
MAX_QUERY_CHARS = 2_000
HISTORICAL_WEIGHT = 0.85
"""Search scores of historical documents are scaled down: the focus context comes first at equal relevance."""
ANALYZE_WAIT_SECONDS = 3.0


class DocumentLibrary:
    """The ``documents.*`` tool operations: list, analyze, get_content, get_summary and search over what a scope
    makes available.

    Scopes come from :class:`~orc.documents.catalog.scopes.DocumentScopes`, the text from the text store, ranked
    spans from the one :class:`~orc.search.retriever.Retriever`, summaries from a :class:`SummaryProvider`, and
    documents whose text cannot be read are handed to the :class:`~orc.documents.catalog.reprocessing.Reprocessor`.
    """

    def __init__(
        self,
        *,
        scopes: DocumentScopes,
        texts: TextStore,
        retriever: Retriever,
        reprocessor: Reprocessor,
        summaries: SummaryProvider | None = None,
    ) -> None:
        self._scopes = scopes
        self._texts = texts
        self._retriever = retriever
        self._reprocessor = reprocessor
        self._summaries: SummaryProvider = summaries or NoSummaries()

    async def _document(self, principal: Principal, scope: DocumentScope, document_id: str) -> AvailableDocument:
        validate_identifier(document_id, what="document")
        found = (await self._scopes.available(principal, scope)).find(document_id)
        if found is None:
            raise not_available(document_id)
        return found

    # -- tools -------------------------------------------------------------------------------------------------

    async def list_documents(
        self, principal: Principal, scope: DocumentScope, *, offset: int = 0, limit: int = DEFAULT_LIST_LIMIT
    ) -> DocumentList:
        """``documents.list``: one page of the available documents with their origin and status."""
        _check_range("offset", offset, 0, None)
        _check_range("limit", limit, 1, MAX_LIST_LIMIT)
        availability = await self._scopes.available(principal, scope)
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
        if not usable(document):
            await self._reprocessor.follow(document, ANALYZE_WAIT_SECONDS)
            info = (await self._document(principal, scope, document_id)).info
        if info.status != "ready":
            return AnalyzeResult(
                document_id=info.document_id,
                filename=info.filename,
                status=info.status,
                status_reason=info.status_reason,
                message=not_ready_message(info),
            )
        digest_status = await self._summaries.request(principal, document)
        summary = await self._summaries.summary(principal, document)
        code = None
        if digest_status == "error":
            code = (await self._document(principal, scope, document_id)).info.digest_error_code
        short = (info.token_estimate or 0) * 4 <= SHORT_DOCUMENT_CHARS
        return AnalyzeResult(
            document_id=info.document_id,
            filename=info.filename,
            status=info.status,
            digest_status=digest_status,
            digest_error_code=code,
            has_summary=summary is not None,
            summary=summary,
            message=analyze_message(summary is not None, code, digest_status, short=short),
        )

    async def summary(self, principal: Principal, scope: DocumentScope, document_id: str) -> DocumentSummary:
        """``documents.get_summary``: the digest; ``not_ready`` before the document and its digest are ready,
        ``no_summary`` when no digest was asked for or it could not be made."""
        document = await self._document(principal, scope, document_id)
        if not usable(document):
            raise NotReady(not_ready_message(document.info))
        summary = await self._summaries.summary(principal, document)
        if summary is None and document.info.digest_status in ("parsing", "stale"):
            raise NotReady(
                f"the summary of {document.info.filename!r} is being made; call documents.analyze to follow it, "
                "or use documents.search meanwhile"
            )
        if summary is None and document.info.digest_error_code == "too_long":
            raise NoSummary(
                f"{document.info.filename!r} is too long to summarize, so it will have no summary; search it with "
                "documents.search instead"
            )
        if summary is None:
            raise NoSummary(
                f"{document.info.filename!r} has no summary yet; use documents.search or documents.get_content "
                "to read it instead"
            )
        return summary

    async def summaries_for_turn(
        self,
        principal: Principal,
        session_id: str,
        focus: tuple[str, str] | None,
        names: Sequence[str],
        *,
        facts: int,
    ) -> list[SummaryWithSources]:
        """The digests of the documents ``names`` names (by file name or SourceRef name) among those a turn of
        ``session_id`` focused on ``focus`` (type, id) can see, each with the spans its first ``facts`` facts cite:
        what an answer that summarizes them quotes. A document that is not ready, or has no digest yet, comes with
        ``summary`` None; a name no available document has is left out."""
        scope = await self._scopes.resolve(
            principal,
            session_id=session_id,
            context_type=focus[0] if focus else None,
            context_id=focus[1] if focus else None,
            include_historical=True,
        )
        available = await self._scopes.available(principal, scope)
        wanted = set(names)
        result = []
        for document in available.documents:
            if document.ref_name not in wanted and document.info.filename not in wanted:
                continue
            summary = await self._summaries.summary(principal, document) if usable(document) else None
            text = await self._text(document) if summary is not None else None
            if summary is None or text is None:
                result.append(
                    SummaryWithSources(document=document.ref_name, summary=None, missing=missing_digest(document))
                )
                continue
            cited = dict.fromkeys(ref.rpartition("::")[2] for _, refs in facts_of(summary.facts, facts) for ref in refs)
            spans = {span.span_id: span for span in text.spans}
            sources = [
                SourceSpan(
                    ref=source_ref(document.ref_name, span_id),
                    document=document.ref_name,
                    span_id=span_id,
                    page=spans[span_id].page,
                    text=spans[span_id].text,
                    section=spans[span_id].section,
                )
                for span_id in cited
                if span_id in spans
            ]
            result.append(SummaryWithSources(document=document.ref_name, summary=summary, sources=sources))
        return result

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
        text = await self._ready_text(document)
        total = text.total_chars
        if offset > total:
            raise InvalidInput(f"offset {offset} is past the end of the text ({total} characters)")
        end = min(offset + limit, total)
        spans = _locators(document, text, text.spans_between(offset, end))
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

    async def page(self, principal: Principal, scope: DocumentScope, document_id: str, page: int) -> PageContent:
        """``documents.get_page``: page ``page`` (1-based) of a paged document (a PDF), with the spans on it."""
        document = await self._document(principal, scope, document_id)
        text = await self._ready_text(document)
        count = len(text.pages)
        if document.info.media_type != PDF:
            raise InvalidInput(
                f"{document.info.filename!r} has no pages; use documents.get_content or documents.search instead",
                code="not_paged",
            )
        if not 1 <= page <= count:
            raise NotFound(
                f"{document.info.filename!r} has pages 1-{count}; page {page} does not exist", code="page_not_found"
            )
        start, end = text.page_range(page - 1)
        spans = [
            located for located in _locators(document, text, text.spans_between(start, end)) if located.page == page
        ]
        return PageContent(
            document_id=document.info.document_id,
            filename=document.info.filename,
            document=document.ref_name,
            page=page,
            page_count=count,
            text=text.pages[page - 1],
            offset=start,
            spans=spans,
        )

    async def span(self, principal: Principal, scope: DocumentScope, source_ref: str) -> SpanContent:
        """``documents.get_span``: the text of the span a SourceRef (``<document>::<span_id>``) names."""
        name, separator, span_id = source_ref.rpartition("::")
        if not separator or not name or not span_id or len(source_ref) > 1200:
            raise InvalidInput(
                "source_ref must be a ref from a search result: a document's name and a span id joined by '::' "
                "(lease.pdf::S3)",
                code="invalid_source_ref",
            )
        available = await self._scopes.available(principal, scope)
        document = next((doc for doc in available.documents if doc.ref_name == name), None)
        if document is None:
            raise not_available(name)
        found = await self._stored_span(principal, document, span_id)
        if found is None:
            text = await self._ready_text(document)
            position = next((index for index, span in enumerate(text.spans) if span.span_id == span_id), None)
            if position is None:
                raise NotFound(f"{name!r} has no span {span_id!r}", code="span_not_found")
            start, end = text.span_offsets(position)
            span = text.spans[position]
            found = SpanText(
                ref=source_ref,
                span_id=span_id,
                page=span.page,
                start=start,
                end=end,
                text=span.text,
                section=span.section,
            )
        return SpanContent(
            document_id=document.info.document_id,
            filename=document.info.filename,
            document=document.ref_name,
            spans=[found.model_copy(update={"ref": source_ref})],
        )

    async def _stored_span(self, principal: Principal, document: AvailableDocument, span_id: str) -> SpanText | None:
        """The span ``S<n>`` as the search index holds it (no text load), or None when the index cannot say."""
        target = search_target(principal, document) if usable(document) else None
        if target is None or not span_id.startswith("S") or not span_id[1:].isdigit():
            return None
        found = await self._retriever.spans(target, [int(span_id[1:]) - 1])
        if not found or found[0].span.span_id != span_id:
            return None
        span = found[0].span
        return SpanText(
            ref=found[0].ref,
            span_id=span.span_id,
            page=span.page,
            start=span.start,
            end=span.end,
            text=span.text,
            section=span.section,
        )

    async def _ready_text(self, document: AvailableDocument) -> DocumentText:
        """The stored text of a ready document; ``not_ready`` (and back into the pipeline) when it cannot be read."""
        text = await self._text(document) if usable(document) else None
        if text is None:
            if usable(document):
                await self._reprocessor.recover(document)
            raise NotReady(not_ready_message(document.info))
        return text

    async def _text(self, document: AvailableDocument) -> DocumentText | None:
        location = document.location
        text = await self._texts.load(location.partition_key, location.document_id, document.content_hash)
        if text is None or text.extracted_text_hash != document.extracted_text_hash:
            return None
        return text

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
        # The query's vector is fetched while the scope is read and the lexical leg ranks.
        query_vector = self._retriever.embed_query(query)
        try:
            availability = await self._scopes.available(principal, scope)
            documents = list(availability.documents)
            if document_ids:
                documents = []
                for document_id in dict.fromkeys(document_ids):
                    found = availability.find(validate_identifier(document_id, what="document"))
                    if found is None:
                        raise not_available(document_id)
                    documents.append(found)
        except BaseException:
            if query_vector is not None:
                query_vector.cancel()
            raise
        targets: list[Target] = []
        by_id: dict[str, AvailableDocument] = {}
        waiting: list[AvailableDocument] = []
        for document in documents:
            if usable(document):
                targets.append(search_target(principal, document))
                by_id[document.info.document_id] = document
            else:
                waiting.append(document)
        retrieval = await self._retriever.retrieve(
            query, principal.organization, targets, limit=limit, query_vector=query_vector
        )
        unreadable = {target.document_id for target in retrieval.unreadable}
        indexing = {target.document_id for target in retrieval.indexing}
        pending: list[PendingDocument] = []
        for document in [*waiting, *(by_id[document_id] for document_id in [*unreadable, *indexing])]:
            if document.info.document_id not in indexing:
                # Stranded, or its stored text is gone: back into the pipeline.
                await self._reprocessor.recover(document)
            pending.append(
                PendingDocument(
                    document_id=document.info.document_id,
                    filename=document.info.filename,
                    status="processing" if document.info.status == "ready" else document.info.status,
                    status_reason=document.info.status_reason,
                )
            )
        searched = len(targets) - len(unreadable) - len(indexing)
        results = [_hit(by_id[ranked.target.document_id], ranked) for ranked in retrieval.spans]
        return SearchResults(
            query=query,
            results=results,
            searched_documents=searched,
            not_ready=pending,
            message=search_message(len(results), searched, pending),
            retrieval=retrieval.legs,
        )


def search_target(principal: Principal, document: AvailableDocument, weight: float | None = None) -> Target:
    """A ready available document as the retriever searches it (historical documents weigh
    :data:`HISTORICAL_WEIGHT` unless told otherwise)."""
    info = document.info
    assert document.extracted_text_hash is not None and document.chunking_version is not None
    location = document.location
    return Target(
        document_id=info.document_id,
        name=document.ref_name,
        version=index_version(document.extracted_text_hash, document.chunking_version),
        scope=document_scope(principal, document),
        weight=weight if weight is not None else (HISTORICAL_WEIGHT if info.origin == "historical" else 1.0),
        stored=VectorLocation(location.partition_key, location.document_id, document.content_hash),
    )


def document_scope(principal: Principal, document: AvailableDocument) -> ScopeFields:
    """Where an available document sits, for the search engine's filters."""
    info = document.info
    if info.context_type == "session":
        return session_scope(principal.organization, principal.user, info.context_id)
    return context_scope(principal.organization, info.context_type, info.context_id)


def _locators(document: AvailableDocument, text: DocumentText, positions: Iterable[int]) -> list[SpanLocator]:
    """Where the spans at ``positions`` of ``text`` sit, with their SourceRefs."""
    located = []
    for position in positions:
        span, (start, end) = text.spans[position], text.span_offsets(position)
        ref = source_ref(document.ref_name, span.span_id)
        located.append(SpanLocator(ref=ref, span_id=span.span_id, page=span.page, start=start, end=end))
    return located


def _check_range(name: str, value: int, minimum: int, maximum: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{name} must be an integer")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise InvalidInput(f"{name} must be {bound} (got {value})", code="invalid_range")


def _hit(document: AvailableDocument, ranked: RankedSpan) -> SearchHit:
    span = ranked.span
    info = document.info
    return SearchHit(
        ref=ranked.ref,
        document=document.ref_name,
        document_id=info.document_id,
        filename=info.filename,
        span_id=span.span_id,
        page=span.page,
        locator=f"page {span.page}" if span.page is not None else f"characters {span.start}-{span.end}",
        section=span.section,
        text=span.text,
        score=ranked.score,
        context_type=info.context_type,
        context_id=info.context_id,
        origin=info.origin,
    )
