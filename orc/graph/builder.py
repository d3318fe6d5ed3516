"""Assembles and compiles the turn graph. Nothing is compiled at import time."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from orc.graph.answer import answer
from orc.graph.context import TurnContext
from orc.graph.context_builder import context_builder
from orc.graph.mcp_executor import mcp_executor
from orc.graph.query_planner import query_planner
from orc.graph.state import TurnState
from orc.graph.tool_router import route_after_answer, route_after_planner, route_after_router, tool_router

TurnGraph = CompiledStateGraph[TurnState, TurnContext, TurnState, TurnState]


def build_graph(checkpointer: BaseCheckpointSaver[str] | None = None) -> TurnGraph:
    """query_planner → tool_router → (mcp_executor → context_builder → answer)* → answer.

    With attached files the router's decision is already made (document_chat, forced, once), so the turn goes
    query_planner → mcp_executor → context_builder → answer: routing on the state in the edges spares it a
    superstep of its own. After a planned tool round the answer request offers the tools again: a model that
    wants more evidence asks for it there, bounded by ``max_tool_rounds``, and one that has enough answers. So a
    tool round costs no planning request of its own.
    """
    graph = StateGraph(TurnState, context_schema=TurnContext)
    graph.add_node("query_planner", query_planner)
    graph.add_node("tool_router", tool_router)
    graph.add_node("mcp_executor", mcp_executor)
    graph.add_node("context_builder", context_builder)
    graph.add_node("answer", answer)
    graph.add_edge(START, "query_planner")
    graph.add_conditional_edges("query_planner", route_after_planner, ["tool_router", "mcp_executor"])
    graph.add_conditional_edges("tool_router", route_after_router, ["mcp_executor", "answer"])
    graph.add_edge("mcp_executor", "context_builder")
    graph.add_edge("context_builder", "answer")
    graph.add_conditional_edges("answer", route_after_answer, ["mcp_executor", END])
    return graph.compile(checkpointer=checkpointer, name="orc-turn")
