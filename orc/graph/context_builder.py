"""context_builder: tool results become grounded context (with the spans to cite) and update the turn's state."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage
from langgraph.runtime import Runtime
from pydantic import ValidationError

from orc.contracts import DocumentChatResult, SourceSpan, ToolCallRecord, Usage
from orc.graph.context import TurnContext
from orc.graph.progress import progress
from orc.graph.state import TurnState
from orc.graph.tool_router import DOCUMENT_CHAT

# A tool result larger than this is cut before it reaches the model; the tools page their own output.
MAX_TOOL_TEXT_CHARS = 20_000


def sources_in(structured: dict[str, Any] | None) -> list[SourceSpan]:
    """Spans a tool returned as evidence: any list of objects that carry a SourceRef ``ref`` and ``text``."""
    if not structured:
        return []
    found: list[SourceSpan] = []
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
                        span_id=str(item.get("span_id") or span_id),
                        page=item.get("page") if isinstance(item.get("page"), int) else None,
                        text=str(item["text"]),
                    )
                )
    return found


async def context_builder(state: TurnState, runtime: Runtime[TurnContext]) -> TurnState:
    """Add each result to the context; document_chat overwrites ``uploaded_file_refs`` with its ``files``."""
    del runtime  # the builder needs nothing beyond the state
    progress("context_builder", "Gathering the evidence", 60)
    context_docs = list(state.get("context_docs") or [])
    sources = list(state.get("sources") or [])
    records = list(state.get("tool_records") or [])
    planning = list(state.get("planning_messages") or [])
    updates: TurnState = {}
    tool_calls = state.get("tool_model_calls", 0)
    usage = Usage.model_validate(state.get("tool_usage") or {})

    for result in state.get("tool_results") or []:
        name = result["name"]
        text = str(result["text"])[:MAX_TOOL_TEXT_CHARS]
        records.append(
            ToolCallRecord(
                name=name,
                arguments=result["arguments"],
                status="error" if result["is_error"] else "ok",
                duration_ms=round(result["duration_ms"], 2),
                error=text[:500] if result["is_error"] else None,
            ).model_dump()
        )
        updates["last_mcp_tool_used"] = name
        if result["is_error"]:
            context_docs.append({"tool": name, "error": True, "text": text})
        elif name == DOCUMENT_CHAT:
            try:
                chat = DocumentChatResult.model_validate(result["structured"])
            except ValidationError:
                context_docs.append({"tool": name, "error": True, "text": "document_chat returned no result"})
            else:
                context_docs.append({"tool": name, "error": False, "text": chat.answer})
                sources.extend(source.model_dump() for source in chat.metadata.sources)
                updates["uploaded_file_refs"] = [ref.model_dump() for ref in chat.files]
                updates["cache"] = chat.metadata.cache
                tool_calls += chat.metadata.model_calls
                usage = usage + chat.metadata.usage
        else:
            context_docs.append({"tool": name, "error": False, "text": text})
            sources.extend(source.model_dump() for source in sources_in(result["structured"]))
        if result["id"] != DOCUMENT_CHAT:
            planning.append(ToolMessage(content=text, tool_call_id=result["id"], name=result["model_name"]))

    return {
        **updates,
        "context_docs": context_docs,
        "sources": sources,
        "tool_records": records,
        "planning_messages": planning,
        "tool_results": [],
        "rounds": state.get("rounds", 0) + 1,
        "tool_model_calls": tool_calls,
        "tool_usage": usage.model_dump(),
    }
