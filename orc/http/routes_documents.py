"""The documents behind a conversation's citations (context-digest-spec §7.1/§8 preview and download).

``GET /api/sessions/{id}/sources?ref=<SourceRef>`` locates a cited span: the page (PDF) or the stretch of text
around it, with the quote's offsets, for the page's side panel. ``GET /api/sessions/{id}/documents/{document_id}/
content`` serves the original upload (pdf.js renders PDFs from it). Both see what the tools see for that
conversation, and nothing of another principal.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Query
from starlette.responses import Response

from orc.documents.catalog.sources import SourceView
from orc.http.dependencies import Caller, Sources

router = APIRouter()

# Previews are shown as PDFs or downloaded: nothing uploaded runs as a page of this origin (an HTML upload would
# otherwise be stored cross-site scripting).
_INLINE_TYPES = frozenset({"application/pdf", "text/plain"})
_CONTENT_HEADERS = {
    "Content-Security-Policy": "sandbox; default-src 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, no-store",
}


@router.get("/sessions/{session_id}/sources", response_model=SourceView, summary="Locate a cited span")
async def get_source(
    session_id: str,
    sources: Sources,
    principal: Caller,
    ref: Annotated[str, Query(description="The citation's SourceRef: <document>::<span_id>.", max_length=1200)],
) -> SourceView:
    """The cited span with its page (PDF) or surrounding text and the quote's offsets in it; 404
    ``document_not_found`` for a document this conversation cannot read, 409 ``not_ready`` while it is processed."""
    url = f"/api/sessions/{quote(session_id)}/documents/{{document_id}}/content"
    return await sources.view(principal, session_id, ref, url)


@router.get(
    "/sessions/{session_id}/documents/{document_id}/content",
    summary="Download a document of the conversation",
    responses={200: {"content": {"application/octet-stream": {}}}},
    response_class=Response,
)
async def get_content(
    session_id: str,
    document_id: str,
    sources: Sources,
    principal: Caller,
    download: Annotated[bool, Query(description="Ask the browser to save it instead of showing it.")] = False,
) -> Response:
    """The original bytes as uploaded. PDFs and plain text are served inline unless ``download``; other formats
    always as attachments."""
    found = await sources.content(principal, session_id, document_id)
    inline = found.content_type in _INLINE_TYPES and not download
    disposition = f"{'inline' if inline else 'attachment'}; filename*=UTF-8''{quote(found.filename)}"
    return Response(
        found.data,
        media_type=found.content_type,
        headers={**_CONTENT_HEADERS, "Content-Disposition": disposition},
    )
