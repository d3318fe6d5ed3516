"""tool_router: attached documents go straight to tools; otherwise one planning call decides."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from orc.graph.context import TurnContext
from orc.graph.progress import progress
from orc.graph.state import Route, TurnState
from orc.prompting import load_prompt

DOCUMENT_CHAT = "document_chat"


async def tool_router(state: TurnState, runtime: Runtime[TurnContext]) -> TurnState:
    """Choose the next step. No separate yes/no routing call: the planning call's tool calls are the decision."""
    ctx = runtime.context
    if state.get("blob_names"):
        # document_chat is forced once, without a planning call; its answer then goes to the answer node.
        route: Route = "answer" if state.get("forced_done") else "tools"
        return {"route": route, "pending_tool_calls": []}
    if state.get("rounds", 0) >= ctx.max_tool_rounds:
        return {"route": "answer", "pending_tool_calls": []}

    # Without attached documents document_chat is not offered to the model at all.
    tools = await ctx.toolbox.model_tools(exclude={DOCUMENT_CHAT}) if ctx.offers_planning_tools else []
    if not tools:
        return {"route": "answer", "pending_tool_calls": []}

    progress("tool_router", "Planning which documents to consult", 20)
    messages: list[BaseMessage] = list(state.get("planning_messages") or [])
    if not messages:
        messages = [
            SystemMessage(load_prompt("tool_planning.system").render(context_block="")),
            HumanMessage(state["standalone_question"]),
        ]
    reply = await ctx.model.bind_tools(tools).ainvoke(messages)
    if not isinstance(reply, AIMessage) or not reply.tool_calls:
        return {"route": "answer", "pending_tool_calls": [], "planning_messages": messages}
    mcp_names = {tool.name: (tool.metadata or {}).get("mcp_name", tool.name) for tool in tools}
    calls = [
        {
            "id": call["id"],
            "name": mcp_names.get(call["name"], call["name"]),
            "model_name": call["name"],
            "args": call["args"],
        }
        for call in reply.tool_calls
    ]
    return {"route": "tools", "pending_tool_calls": calls, "planning_messages": [*messages, reply]}


def route_after_router(state: TurnState) -> str:
    """Conditional edge: ``mcp_executor`` or ``answer``."""
    return "mcp_executor" if state.get("route") == "tools" else "answer"
