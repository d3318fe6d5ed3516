"""query_planner: load history, seed the turn from the latest assistant message, make the question standalone."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from langgraph.types import Command

from orc.conversations import FocusContext
from orc.documents.contexts import historical_from_turns
from orc.documents.records import ContextRef
from orc.graph.context import TurnContext
from orc.graph.progress import progress
from orc.graph.state import TurnState
from orc.graph.tool_router import AfterPlanner, after_planner
from orc.models.prompting import format_history, load_prompt


async def query_planner(state: TurnState, runtime: Runtime[TurnContext]) -> Command[AfterPlanner]:
    """Seed ``uploaded_file_refs``, ``last_mcp_tool_used`` and the historical contexts; rewrite a follow-up (no
    model call on turn one). Then on to the executor with attached files, else to tool_router."""
    return Command(update=await _plan_query(state, runtime.context), goto=after_planner(state))


async def _plan_query(state: TurnState, ctx: TurnContext) -> TurnState:
    progress("query_planner", "Reading the conversation", 5)
    snapshot = await ctx.conversations.load(ctx.principal, ctx.conversation_id, ctx.history_turns)
    turns = snapshot.turns
    question = state["question"]
    focus = state.get("focus_context")
    current = ContextRef.parse(focus.type, focus.id) if focus else None
    historical = [FocusContext(type=ref.type, id=ref.id) for ref in historical_from_turns(turns, current)]
    if not turns:
        return {
            "standalone_question": question,
            "uploaded_file_refs": [],
            "last_mcp_tool_used": None,
            "conversation_header": snapshot.header,
            "historical_contexts": historical,
        }

    latest = turns[-1].assistant
    history = []
    for turn in turns:
        history.append({"role": "user", "content": turn.user.content})
        history.append({"role": "assistant", "content": turn.assistant.content})
    progress("query_planner", "Understanding the follow-up question", 10)
    system = load_prompt("rewrite.system").render(history=format_history(history))
    reply = await ctx.model.ainvoke([SystemMessage(system), HumanMessage(question)])
    ctx.meter.record(reply)
    standalone = reply.text.strip() or question
    return {
        "standalone_question": standalone,
        "uploaded_file_refs": list(latest.uploaded_file_refs),
        "last_mcp_tool_used": latest.last_mcp_tool_used,
        "conversation_header": snapshot.header,
        "historical_contexts": historical,
    }
