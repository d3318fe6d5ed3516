"""context_builder: tool results become grounded context (with the spans to cite) and update the turn's state."""

from __future__ import annotations

import contextlib
from typing import Any, Literal

from langchain_core.messages import ToolMessage
from langgraph.runtime import Runtime
from langgraph.types import Command
from pydantic import ValidationError

from orc.contracts import DocumentChatResult, RetrievalLegs, SourceSpan, ToolCallRecord, Usage
from orc.graph.context import TurnContext
from orc.graph.pause import context_request, emit_pause
from orc.graph.progress import progress
from orc.graph.state import SourceContext, ToolAnswer, TurnState
from orc.tool_contract import DOCUMENT_CHAT

# A tool result larger than this is cut before it reaches the model; the tools page their own output.
MAX_TOOL_TEXT_CHARS = 20_000


def sources_in(structured: dict[str, Any] | None) -> list[SourceSpan]:
    """Spans a tool returned as evidence.

    Any list of objects that carry a SourceRef ``ref`` and ``text`` (search results); and a page of text with
    the spans it covers as ``ref`` + ``start``/``end`` offsets (``documents.get_content``), cut from the page.
    """
    if not structured:
        return []
    found: list[SourceSpan] = _page_spans(structured)
    for value in structured.values():
        if not isinstance(value, list):
            continue
        for item in value:
            if isinstance(item, dict) and "ref" in item and "text" in item and "::" in str(item["ref"]):
                document, _, span_id = str(item["ref"]).rpartition("::")
                found.append(
                    SourceSpan(
                        ref=str(item["ref"]),
                        document=str(item.get("document") or item.get("filename") or document),
                        document_id=_document_id(item) or _document_id(structured),
                        span_id=str(item.get("span_id") or span_id),
                        page=item.get("page") if isinstance(item.get("page"), int) else None,
                        text=str(item["text"]),
                        section=item["section"] if isinstance(item.get("section"), str) else None,
                    )
                )
    return found


def _document_id(item: dict[str, Any]) -> str | None:
    """The catalog id a tool result (or one of its items) names, if any."""
    value = item.get("document_id")
    return value if isinstance(value, str) and value else None


def _page_spans(structured: dict[str, Any]) -> list[SourceSpan]:
    text, offset, spans = structured.get("text"), structured.get("offset"), structured.get("spans")
    if not isinstance(text, str) or not isinstance(offset, int) or not isinstance(spans, list):
        return []
    found = []
    for item in spans:
        if not (isinstance(item, dict) and "::" in str(item.get("ref")) and "text" not in item):
            continue
        start, end = item.get("start"), item.get("end")
        if not isinstance(start, int) or not isinstance(end, int):
            continue
        piece = text[max(start - offset, 0) : max(end - offset, 0)].strip()
        if piece:
            document, _, span_id = str(item["ref"]).rpartition("::")
            page = item.get("page")
            found.append(
                SourceSpan(
                    ref=str(item["ref"]),
                    document=str(structured.get("document") or document),
                    document_id=_document_id(structured),
                    span_id=str(item.get("span_id") or span_id),
                    page=page if isinstance(page, int) else None,
                    text=piece,
                )
            )
    return found


def source_contexts_in(structured: dict[str, Any] | None) -> dict[str, SourceContext]:
    """SourceRef → the context it came from, for evidence that names one."""
    found: dict[str, SourceContext] = {}
    for value in (structured or {}).values():
        if not isinstance(value, list):
            continue
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("ref"), str) and item.get("origin"):
                found[item["ref"]] = SourceContext(
                    origin=str(item["origin"]),
                    type=str(item.get("context_type", "")),
                    id=str(item.get("context_id", "")),
                )
    return found


def _summary(structured: dict[str, Any] | None, text: str, found: list[SourceSpan]) -> str:
    """What a tool answered, for the answer prompt: its own text, or a note when its evidence became sources."""
    if not found:
        return text
    notes = [str(structured[key]) for key in ("message", "hint") if structured and isinstance(structured.get(key), str)]
    return " ".join(notes) or f"{len(found)} passage(s), listed with the sources."


AfterContext = Literal["answer", "context_pause"]


async def context_builder(state: TurnState, runtime: Runtime[TurnContext]) -> Command[AfterContext]:
    """Add each result to the context; document_chat overwrites ``uploaded_file_refs`` with its ``files``. A turn
    whose caller can show a context request and that lacks context goes to ``context_pause`` instead of the answer.
    """
    ctx = runtime.context
    progress("context_builder", "Gathering the evidence", 60)
    context_docs = list(state.get("context_docs") or [])
    sources = list(state.get("sources") or [])
    source_contexts = dict(state.get("source_contexts") or {})
    records = list(state.get("tool_records") or [])
    planning = list(state.get("planning_messages") or [])
    updates: TurnState = {}
    tool_calls = state.get("tool_model_calls", 0)
    usage = state.get("tool_usage") or Usage()

    for result in state.get("tool_results") or []:
        name = result.name
        text = result.text[:MAX_TOOL_TEXT_CHARS]
        records.append(
            ToolCallRecord(
                name=name,
                arguments=result.arguments,
                status="error" if result.is_error else "ok",
                duration_ms=round(result.duration_ms, 2),
                error=text[:500] if result.is_error else None,
            )
        )
        updates["last_mcp_tool_used"] = name
        if result.is_error:
            context_docs.append(ToolAnswer(tool=name, text=text, error=True))
        elif name == DOCUMENT_CHAT:
            try:
                chat = DocumentChatResult.model_validate(result.structured)
            except ValidationError:
                context_docs.append(ToolAnswer(tool=name, text="document_chat returned no result", error=True))
            else:
                if chat.answer:
                    # An answer mode result (evidence mode has none: its spans are the sources).
                    context_docs.append(ToolAnswer(tool=name, text=chat.answer))
                sources.extend(chat.metadata.sources)
                updates["uploaded_file_refs"] = chat.files
                updates["cache"] = chat.metadata.cache
                updates["retrieval_rounds"] = max(state.get("retrieval_rounds", 0), chat.metadata.retrieval_rounds)
                updates["retrieval"] = chat.metadata.retrieval
                tool_calls += chat.metadata.model_calls
                usage = usage + chat.metadata.usage
        else:
            found = sources_in(result.structured)
            sources.extend(found)
            if isinstance(result.structured, dict) and isinstance(result.structured.get("retrieval"), dict):
                # documents.search reports its legs too; a malformed report is simply not shown.
                with contextlib.suppress(ValidationError):
                    updates["retrieval"] = RetrievalLegs.model_validate(result.structured["retrieval"])
            source_contexts.update(source_contexts_in(result.structured))
            # Evidence reaches the answer as sources; repeating its text as the tool's answer would double it.
            context_docs.append(ToolAnswer(tool=name, text=_summary(result.structured, text, found)))
        if result.id != DOCUMENT_CHAT:
            planning.append(ToolMessage(content=text, tool_call_id=result.id, name=result.model_name))

    built: TurnState = {
        **updates,
        "context_docs": context_docs,
        "sources": sources,
        "source_contexts": source_contexts,
        "tool_records": records,
        "planning_messages": planning,
        "tool_results": [],
        "rounds": state.get("rounds", 0) + 1,
        "tool_model_calls": tool_calls,
        "tool_usage": usage,
    }
    if ctx is not None and ctx.context_requests and state.get("rounds", 0) == 0:
        request = await context_request({**state, **built}, ctx)
        if request:
            # The turn pauses before its answer request: asking costs no model call.
            emit_pause(request)
            return Command(update={**built, "context_request": request}, goto="context_pause")
    return Command(update=built, goto="answer")
