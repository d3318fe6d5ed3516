"""Compact text renderings of the document tools' results: what a model reads (the structured content is intact)."""

from __future__ import annotations

from orc.documents.catalog.results import (
    AnalyzeResult,
    ContentPage,
    DocumentList,
    PageContent,
    SearchResults,
    SpanContent,
)
from orc.documents.catalog.summaries import DocumentSummary
from orc.documents.records import DocumentInfo


def _where(document: DocumentInfo) -> str:
    if document.context_type == "session":
        return "session"
    where = f"{document.context_type} {document.context_id}"
    return f"{where}, {document.origin}" if document.origin and document.origin != "focus" else where


def document_line(document: DocumentInfo) -> str:
    """``- lease.pdf [ready] (folder legal) id=doc-…, ~1200 tokens``."""
    details = [f"id={document.document_id}"]
    if document.token_estimate is not None:
        details.append(f"~{document.token_estimate} tokens")
    if document.has_summary:
        details.append("summary available")
    if document.status == "failed" and document.status_reason:
        details.append(document.status_reason)
    return f"- {document.filename} [{document.status}] ({_where(document)}) {', '.join(details)}"


def render_list(result: DocumentList) -> str:
    """The listing, one document per line, with the scope it was computed for."""
    scope = []
    if result.focus_context:
        scope.append(f"focus {result.focus_context.type} {result.focus_context.id}")
    if result.historical_contexts:
        scope.append("historical " + ", ".join(f"{c.type} {c.id}" for c in result.historical_contexts))
    if result.session_id:
        scope.append(f"session {result.session_id}")
    header = f"{result.total} document(s) available" + (f" ({'; '.join(scope)})" if scope else "")
    lines = [header + ":" if result.documents else header + "."]
    lines.extend(document_line(document) for document in result.documents)
    if result.next_offset is not None:
        lines.append(f"(more: call again with offset={result.next_offset})")
    return "\n".join(lines)


def render_analyze(result: AnalyzeResult) -> str:
    """Status, digest status and message (and the summary when there is one)."""
    summary = result.digest_status + (f" ({result.digest_error_code})" if result.digest_error_code else "")
    text = f"{result.filename} [{result.status}; summary: {summary}]: {result.message}"
    if result.summary is not None:
        text += "\n\n" + render_summary(result.summary)
    return text


def render_content(page: ContentPage) -> str:
    """The page of text with its position and, for long documents, the hint."""
    end = page.offset + len(page.text)
    position = f"characters {page.offset}-{end} of {page.total}"
    more = f"; next_offset={page.next_offset}" if page.next_offset is not None else "; end of document"
    refs = ", ".join(span.ref for span in page.spans)
    text = f"{page.document} ({position}{more})\nspans: {refs}\n\n{page.text}"
    return f"{text}\n\n{page.hint}" if page.hint else text


def render_page(page: PageContent) -> str:
    """The page's text under its position, with the spans on it."""
    refs = ", ".join(span.ref for span in page.spans)
    return f"{page.document} (page {page.page} of {page.page_count})\nspans: {refs}\n\n{page.text}"


def render_span(found: SpanContent) -> str:
    """The span's text under its ref and page."""
    span = found.spans[0]
    where = f", page {span.page}" if span.page is not None else ""
    return f"[{span.ref}]{where}\n{span.text}"


def render_summary(summary: DocumentSummary) -> str:
    """The summary and its facts with their SourceRefs."""
    lines = [f"Summary of {summary.filename}: {summary.summary}"]
    for fact in summary.facts:
        sources = ", ".join(str(source) for source in fact.get("sources", []))
        lines.append(f"- {fact.get('claim', '')} [{sources}]")
    return "\n".join(lines)


def render_search(result: SearchResults) -> str:
    """The message, then each passage under its ref, locator and section title."""
    parts = [result.message]
    for hit in result.results:
        where = "session" if hit.context_type == "session" else f"{hit.context_type} {hit.context_id}"
        if hit.origin == "historical":
            where += ", historical context"
        section = f"; section: {hit.section}" if hit.section else ""
        parts.append(f"[{hit.ref}] ({hit.locator}{section}; {where})\n{hit.text}")
    return "\n\n".join(parts)
