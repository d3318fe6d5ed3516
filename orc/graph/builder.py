"""Assembles and compiles the turn graph. Nothing is compiled at import time."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from orc.graph.answer import answer
from orc.graph.context import TurnContext
from orc.graph.context_builder import context_builder
from orc.graph.mcp_executor import mcp_executor
from orc.graph.pause import context_pause
from orc.graph.query_planner import query_planner
from orc.graph.state import CHECKPOINTED_TYPES, TurnState
from orc.graph.tool_router import tool_router
from orc.telemetry import node as traced

TurnGraph = CompiledStateGraph[TurnState, TurnContext, TurnState, TurnState]


P = ParamSpec("P")
T = TypeVar("T")


def node(name: str, function: Callable[P, T]) -> Callable[P, T]:
    """A node in its span (orc.telemetry), behind a yield point where a flooding caller's turn gives way."""
    return traced(name, scheduled(function))


def scheduled(function: Callable[P, T]) -> Callable[P, T]:
    """``function``, an async node, behind its turn's gate (``TurnContext.gate``); synchronous nodes are returned
    as they are. A turn without a gate, or whose gate does not ask it to yield, goes straight on."""
    if not inspect.iscoroutinefunction(function):
        return function

    @functools.wraps(function)
    async def gated(*args: P.args, **kwargs: P.kwargs) -> Any:
        runtime = kwargs.get("runtime", args[1] if len(args) > 1 else None)
        gate = getattr(getattr(runtime, "context", None), "gate", None)
        if gate is None or not gate.yielding():
            return await function(*args, **kwargs)
        async with gate.step():
            return await function(*args, **kwargs)

    return gated  # type: ignore[return-value]


def build_graph(checkpointer: BaseCheckpointSaver[str] | None = None) -> TurnGraph:
    """query_planner → tool_router → (mcp_executor → context_builder → answer)* → answer.

    With attached files the router's decision is already made (document_chat, forced, once), so the turn goes
    query_planner → mcp_executor → context_builder → answer: routing on the state in the edges spares it a
    superstep of its own. After a planned tool round the answer request offers the tools again: a model that
    wants more evidence asks for it there, bounded by ``max_tool_rounds``, and one that has enough answers. So a
    tool round costs no planning request of its own.

    The three nodes with a choice route with ``Command(goto=...)``; ``destinations`` declares their targets, for
    validation and the drawing.
    """
    if checkpointer is not None:
        # The savers deserialize only LangGraph's own safe types unless told more: register the state's models, so
        # a resumed turn gets them back whole (and LangGraph logs no "unregistered type").
        checkpointer = checkpointer.with_allowlist([(cls.__module__, cls.__name__) for cls in CHECKPOINTED_TYPES])
    graph = StateGraph(TurnState, context_schema=TurnContext)
    # Each node runs in its own span (orc.telemetry; a no-op unless tracing is configured), after a yield point.
    graph.add_node("query_planner", node("query_planner", query_planner), destinations=("tool_router", "mcp_executor"))
    graph.add_node("tool_router", node("tool_router", tool_router), destinations=("mcp_executor", "answer"))
    graph.add_node("mcp_executor", node("mcp_executor", mcp_executor))
    graph.add_node(
        "context_builder", node("context_builder", context_builder), destinations=("answer", "context_pause")
    )
    graph.add_node("context_pause", node("context_pause", context_pause))
    graph.add_node("answer", node("answer", answer), destinations=("mcp_executor", "context_pause", END))
    graph.add_edge(START, "query_planner")
    graph.add_edge("mcp_executor", "context_builder")
    graph.add_edge("context_pause", "answer")
    return graph.compile(checkpointer=checkpointer, name="orc-turn")
