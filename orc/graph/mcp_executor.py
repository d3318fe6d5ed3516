"""mcp_executor: run the turn's tool calls over MCP (concurrently), forcing document_chat for attached files."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.runtime import Runtime

from orc.graph.context import TurnContext
from orc.graph.events import ToolEvent
from orc.graph.progress import emit, progress
from orc.graph.state import PlannedCall, ToolResult, TurnState
from orc.mcp_client import ToolOutcome
from orc.tool_contract import DOCUMENT_CHAT


def document_chat_arguments(state: TurnState) -> dict[str, Any]:
    """Arguments of the forced document_chat call, with blob-name cache validation.

    ``mode="evidence"``: the tool returns the ranked spans and file handles without answering, so the answer
    node's call is the turn's only model call. The question is the retrieval question (the user's words plus the
    recent questions' key words on a follow-up). ``cached_file_info`` is sent only when the *set* of requested blob
    names equals the set of cached refs' blob names (case-sensitive, order ignored); any difference means fresh
    processing, never partial reuse.
    """
    blob_names = list(state.get("blob_names") or [])
    refs = state.get("uploaded_file_refs") or []
    args: dict[str, Any] = {
        "question": state["standalone_question"],
        "document_names": blob_names,
        "mode": "evidence",
    }
    if refs and {ref.blob_name for ref in refs} == set(blob_names):
        args["cached_file_info"] = [ref.model_dump() for ref in refs]
    return args


def planned_calls(state: TurnState) -> list[PlannedCall]:
    """The calls to run this round: the forced document_chat, or what the planning call asked for."""
    if state.get("blob_names"):
        forced = PlannedCall(
            id=DOCUMENT_CHAT, name=DOCUMENT_CHAT, model_name=DOCUMENT_CHAT, args=document_chat_arguments(state)
        )
        return [forced]
    return list(state.get("pending_tool_calls") or [])


async def mcp_executor(state: TurnState, runtime: Runtime[TurnContext]) -> TurnState:
    """Call every planned tool; scope is injected by the toolbox, never taken from the model."""
    toolbox = runtime.context.toolbox
    calls = planned_calls(state)
    # Progress is read by people (the page, the terminal): the tool events that follow name each tool.
    progress("mcp_executor", "Looking in the documents", 35)

    async def run(call: PlannedCall) -> ToolResult:
        emit(ToolEvent(type="tool", name=call.name, status="running", duration_ms=0))
        outcome: ToolOutcome = await toolbox.call(call.name, call.args)
        emit(
            ToolEvent(
                type="tool",
                name=call.name,
                status="error" if outcome.is_error else "ok",
                duration_ms=round(outcome.duration_ms, 2),
            )
        )
        return ToolResult(
            id=call.id,
            name=call.name,
            model_name=call.model_name,
            arguments=outcome.arguments,
            structured=outcome.structured,
            text=outcome.text,
            is_error=outcome.is_error,
            duration_ms=outcome.duration_ms,
        )

    results = await asyncio.gather(*(run(call) for call in calls))
    return {"tool_results": list(results)}
