"""tool_router: attached documents go straight to tools (:func:`after_planner`); otherwise one planning call
decides the first tool round, and the answer request (with the tools offered) any later one.

Routing is by ``Command(goto=...)`` from the node that decides, not by conditional edges: LangGraph gives an
edge function a private copy of every state channel with the node's writes applied, and those copies were the
largest part of LangGraph's own work in a turn.
"""

from __future__ import annotations

from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime
from langgraph.types import Command

from orc.documents.catalog.library import MAX_LIST_LIMIT
from orc.documents.catalog.results import DocumentList
from orc.graph.context import TurnContext
from orc.graph.context_block import render_context_block
from orc.graph.progress import progress
from orc.graph.state import ListedDocument, PlannedCall, TurnState
from orc.models.prompting import load_prompt
from orc.telemetry import model_call
from orc.tool_contract import DOCUMENT_TOOLS, DOCUMENTS_LIST, NEVER_PLANNED

AfterPlanner = Literal["tool_router", "mcp_executor"]
AfterRouter = Literal["mcp_executor", "answer"]
AfterAnswer = Literal["mcp_executor", "context_pause", "__end__"]


def after_planner(state: TurnState) -> AfterPlanner:
    """Where query_planner goes: attached files force document_chat, without a planning call; otherwise plan."""
    return "mcp_executor" if state.get("blob_names") else "tool_router"


def after_answer(pending_tool_calls: list[PlannedCall]) -> AfterAnswer:
    """Where answer goes: back to the executor when its request asked for more tools, else the turn is done."""
    return "mcp_executor" if pending_tool_calls else "__end__"  # langgraph.graph.END


async def tool_router(state: TurnState, runtime: Runtime[TurnContext]) -> Command[AfterRouter]:
    """Plan the turn's first tool round. No separate yes/no routing call: the planning call's tool calls are the
    decision. Later rounds are asked for by the answer node's own request (:func:`answer_tools`)."""
    update = await _plan(state, runtime.context)
    return Command(update=update, goto="mcp_executor" if update.get("pending_tool_calls") else "answer")


async def _plan(state: TurnState, ctx: TurnContext) -> TurnState:
    if ctx.max_tool_rounds < 1:
        return {"pending_tool_calls": []}

    # Without attached documents document_chat is not offered to the model at all.
    tools = await planning_tools(ctx)
    if not tools:
        return {"pending_tool_calls": []}

    progress("tool_router", "Planning which documents to consult", 20)
    updates: TurnState = {}
    if state.get("available_documents") is None and any(_mcp_name(tool) == DOCUMENTS_LIST for tool in tools):
        listed = await available_documents(state, ctx)
        updates["available_documents"] = listed
        if listed == [] and all(_mcp_name(tool) in DOCUMENT_TOOLS for tool in tools):
            return {**updates, "pending_tool_calls": []}
    block = render_context_block({**state, **updates})
    messages: list[BaseMessage] = [
        SystemMessage(load_prompt("tool_planning.system").render(context_block=block)),
        HumanMessage(state["standalone_question"]),
    ]
    with model_call("planning"):
        reply = await ctx.model.bind_tools(tools).ainvoke(messages)
        ctx.meter.record(reply)
    calls = requested_calls(reply, tools)
    if not calls:
        return {**updates, "pending_tool_calls": [], "planning_messages": messages}
    return {**updates, "pending_tool_calls": calls, "planning_messages": [*messages, reply]}


async def planning_tools(ctx: TurnContext) -> list[BaseTool]:
    """The tools a model may call to plan: orc's document tools and extensions, never document_chat or a tool
    that changes the session."""
    if not ctx.offers_planning_tools:
        return []
    return await ctx.toolbox.model_tools(exclude=NEVER_PLANNED)


async def answer_tools(state: TurnState, ctx: TurnContext) -> list[BaseTool]:
    """The tools offered with the answer request: after a planned tool round, while rounds remain, so that a model
    wanting more evidence asks in the same request that would otherwise answer (no extra planning request)."""
    rounds = state.get("rounds", 0)
    if state.get("blob_names") or not 1 <= rounds < ctx.max_tool_rounds:
        return []
    return await planning_tools(ctx)


def requested_calls(reply: BaseMessage, tools: list[BaseTool]) -> list[PlannedCall]:
    """The calls of a model reply to tools in ``tools``, named by their MCP names, for the executor (a call to a tool
    that was not offered is dropped)."""
    if not isinstance(reply, AIMessage) or not reply.tool_calls:
        return []
    mcp_names = {tool.name: _mcp_name(tool) for tool in tools}
    return [
        PlannedCall(
            # LangChain types a call's id as optional; the providers orc talks to always set one.
            id=call["id"] or call["name"],
            name=mcp_names[call["name"]],
            model_name=call["name"],
            args=call["args"],
        )
        for call in reply.tool_calls
        if call["name"] in mcp_names
    ]


async def available_documents(state: TurnState, ctx: TurnContext) -> list[ListedDocument] | None:
    """The documents available to this turn, read through the turn's MCP session (``documents.list``, with the scope
    the toolbox injects, as every tool gets it): the graph reaches documents one way. ``None`` when the server
    cannot list them."""
    focus = state.get("focus_context")
    listed: list[ListedDocument] = []
    offset: int | None = 0
    while offset is not None:
        outcome = await ctx.toolbox.call(DOCUMENTS_LIST, {"offset": offset, "limit": MAX_LIST_LIMIT})
        if outcome.is_error or outcome.structured is None:
            return None
        page = DocumentList.model_validate(outcome.structured)
        listed.extend(
            ListedDocument(
                filename=info.filename,
                context_type=info.context_type,
                context_id=info.context_id,
                status=info.status,
                origin=info.origin,
                is_focus=focus is not None and (info.context_type, info.context_id) == (focus.type, focus.id),
                document_id=info.document_id,
            )
            for info in page.documents
        )
        offset = page.next_offset
    return listed


def _mcp_name(tool: BaseTool) -> str:
    return str((tool.metadata or {}).get("mcp_name", tool.name))
