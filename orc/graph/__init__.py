"""The LangGraph state graph of one turn: query_planner → tool_router → mcp_executor → context_builder → answer.

Imported lazily, so the typed events (:mod:`orc.graph.events`) can be read without loading LangGraph.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orc.graph.builder import build_graph
    from orc.graph.context import TurnContext
    from orc.graph.state import TurnState

_EXPORTS = {"TurnContext": "orc.graph.context", "TurnState": "orc.graph.state", "build_graph": "orc.graph.builder"}

__all__ = ["TurnContext", "TurnState", "build_graph"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'orc.graph' has no attribute {name!r}")
    return getattr(import_module(module), name)
