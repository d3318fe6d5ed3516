"""The ``documents.*`` tools: list, analyze, get_content, get_summary and search over the available documents.

Every call works on the documents its scope makes available (session documents, the focus context's derived
set and, with ``include_historical``, the historical contexts' sets); anything else is ``not_found``. The tool
access rules are enforced here: ``get_summary`` and ``get_content`` refuse documents that are not ready
(``not_ready``), and long documents are served one page at a time with a hint to search instead.
"""

from __future__ import annotations

import functools
from typing import Annotated

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations
from pydantic import Field

from mcp_server.tools.rendering import (
    render_analyze,
    render_content,
    render_list,
    render_page,
    render_search,
    render_span,
    render_summary,
)
from mcp_server.tools.scoped import scoped_tool
from orc.documents.catalog.availability import DocumentScope
from orc.documents.catalog.library import (
    DEFAULT_LIST_LIMIT,
    DEFAULT_PAGE_CHARS,
    DEFAULT_SEARCH_LIMIT,
    MAX_LIST_LIMIT,
    MAX_PAGE_CHARS,
    MAX_SEARCH_LIMIT,
    DocumentLibrary,
)
from orc.documents.catalog.results import (
    AnalyzeResult,
    ContentPage,
    DocumentList,
    PageContent,
    SearchResults,
    SpanContent,
)
from orc.documents.catalog.scopes import DocumentScopes
from orc.documents.catalog.summaries import DocumentSummary
from orc.principal import Principal
from orc.tool_contract import (
    DOCUMENTS_ANALYZE,
    DOCUMENTS_GET_CONTENT,
    DOCUMENTS_GET_PAGE,
    DOCUMENTS_GET_SPAN,
    DOCUMENTS_GET_SUMMARY,
    DOCUMENTS_LIST,
    DOCUMENTS_SEARCH,
)

DocumentId = Annotated[str, Field(description="The document_id from documents.list.")]
_READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)


def register(server: FastMCP, library: DocumentLibrary, scopes: DocumentScopes) -> None:
    """Add the seven ``documents.*`` tools to ``server``, over ``library``, each in the scope its arguments name
    (checked by ``scopes``)."""
    # In the order clients list them.
    _register_overview(server, library, scopes)
    _register_summary_and_search(server, library, scopes)
    _register_pages_and_spans(server, library, scopes)


def _register_overview(server: FastMCP, library: DocumentLibrary, scopes: DocumentScopes) -> None:
    tool = functools.partial(scoped_tool, server, scopes)

    @tool(
        name=DOCUMENTS_LIST,
        title="List available documents",
        description=(
            "List the documents available here: the session's attached documents, then those of the focus context "
            "(and of the contexts it includes), each with its origin context (context_type, context_id), status "
            "(uploading, processing, ready, failed), whether a summary exists, size and token estimate. With no "
            "session_id and no focus context it lists what the caller's organization makes available: the "
            "organization's documents and those of every folder and usecase (contexts.list shows the tree). "
            "Start here."
        ),
        annotations=_READ_ONLY,
        failure="listing the documents failed",
        render=render_list,
    )
    async def documents_list(
        principal: Principal,
        scope: DocumentScope,
        offset: Annotated[int, Field(description="Skip this many documents.", json_schema_extra={"minimum": 0})] = 0,
        limit: Annotated[
            int,
            Field(
                description=f"At most this many documents (1-{MAX_LIST_LIMIT}).",
                json_schema_extra={"minimum": 1, "maximum": MAX_LIST_LIMIT},
            ),
        ] = DEFAULT_LIST_LIMIT,
    ) -> DocumentList:
        return await library.list_documents(principal, scope, offset=offset, limit=limit)

    @tool(
        name=DOCUMENTS_ANALYZE,
        title="Analyze a document",
        description=(
            "Start or follow the processing of a document and report its status; use it for a document that is "
            "uploaded but not ready, or to get a document's summary. When the document is ready it makes the "
            "summary (digest) if there is none yet, waits a few seconds for it, and includes it when it is done "
            "(it never invents one)."
        ),
        annotations=ToolAnnotations(readOnlyHint=False, idempotentHint=True, openWorldHint=False),
        failure="analyzing the document failed",
        render=render_analyze,
    )
    async def documents_analyze(principal: Principal, document_id: DocumentId, scope: DocumentScope) -> AnalyzeResult:
        return await library.analyze(principal, scope, document_id)

    @tool(
        name=DOCUMENTS_GET_CONTENT,
        title="Read a document's text",
        description=(
            "Return the extracted text of a ready document, one page at a time (offset, limit → next_offset, "
            "total), with the spans the page covers. Meant for short documents; for long ones prefer "
            "documents.search. Refused with not_ready until the document is ready."
        ),
        annotations=_READ_ONLY,
        failure="reading the document failed",
        render=render_content,
    )
    async def documents_get_content(
        principal: Principal,
        document_id: DocumentId,
        offset: Annotated[
            int, Field(description="First character to return (0, then next_offset).", json_schema_extra={"minimum": 0})
        ] = 0,
        limit: Annotated[
            int,
            Field(
                description=f"Characters to return (1-{MAX_PAGE_CHARS}).",
                json_schema_extra={"minimum": 1, "maximum": MAX_PAGE_CHARS},
            ),
        ] = DEFAULT_PAGE_CHARS,
        *,
        scope: DocumentScope,
    ) -> ContentPage:
        return await library.content(principal, scope, document_id, offset=offset, limit=limit)


def _register_summary_and_search(server: FastMCP, library: DocumentLibrary, scopes: DocumentScopes) -> None:
    tool = functools.partial(scoped_tool, server, scopes)

    @tool(
        name=DOCUMENTS_GET_SUMMARY,
        title="Get a document's summary",
        description=(
            "Return the per-file summary (digest) of a document, each fact with its SourceRefs. Refused with "
            "not_ready until the document and its summary are ready, and with no_summary when no summary was made "
            "yet (documents.analyze makes one) or it could not be made."
        ),
        annotations=_READ_ONLY,
        failure="reading the summary failed",
        render=render_summary,
    )
    async def documents_get_summary(
        principal: Principal, document_id: DocumentId, scope: DocumentScope
    ) -> DocumentSummary:
        return await library.summary(principal, scope, document_id)

    @tool(
        name=DOCUMENTS_SEARCH,
        title="Search the documents",
        description=(
            "Find the passages (spans) of the available documents that best match a query, ranked, each with its "
            "SourceRef [<filename>::<span_id>], page or character locator, and origin context. Cite passages by "
            "their ref. Documents that are not ready yet are listed apart."
        ),
        annotations=_READ_ONLY,
        failure="searching the documents failed",
        render=render_search,
    )
    async def documents_search(
        principal: Principal,
        query: Annotated[str, Field(description="What to look for, in the documents' own words if possible.")],
        limit: Annotated[
            int,
            Field(
                description=f"How many passages to return (1-{MAX_SEARCH_LIMIT}).",
                json_schema_extra={"minimum": 1, "maximum": MAX_SEARCH_LIMIT},
            ),
        ] = DEFAULT_SEARCH_LIMIT,
        document_ids: Annotated[
            list[str] | None,
            Field(description="Search only these documents (ids from documents.list); default: all available."),
        ] = None,
        *,
        scope: DocumentScope,
    ) -> SearchResults:
        return await library.search(principal, scope, query, limit=limit, document_ids=document_ids)


def _register_pages_and_spans(server: FastMCP, library: DocumentLibrary, scopes: DocumentScopes) -> None:
    tool = functools.partial(scoped_tool, server, scopes)

    @tool(
        name=DOCUMENTS_GET_PAGE,
        title="Read one page of a document",
        description=(
            "Return page `page` of a ready paged document (a PDF) with the spans on it, e.g. to read around a "
            "search result's page. Documents without pages answer not_paged (use documents.get_content); a page "
            "outside the document answers page_not_found with the page count."
        ),
        annotations=_READ_ONLY,
        failure="reading the page failed",
        render=render_page,
    )
    async def documents_get_page(
        principal: Principal,
        document_id: DocumentId,
        page: Annotated[int, Field(description="1-based page number.", json_schema_extra={"minimum": 1})],
        scope: DocumentScope,
    ) -> PageContent:
        return await library.page(principal, scope, document_id, page)

    @tool(
        name=DOCUMENTS_GET_SPAN,
        title="Read one cited span",
        description=(
            "Return the whole text of the span a SourceRef names (the `ref` documents.search returns), with its "
            "page. Unknown documents answer document_not_found and unknown spans span_not_found."
        ),
        annotations=_READ_ONLY,
        failure="reading the span failed",
        render=render_span,
    )
    async def documents_get_span(
        principal: Principal,
        source_ref: Annotated[
            str,
            Field(description="The `ref` of a search result or citation: <document>::<span_id>.", max_length=1200),
        ],
        scope: DocumentScope,
    ) -> SpanContent:
        return await library.span(principal, scope, source_ref)
