"""The LangGraph state graph of one turn: query_planner → tool_router → mcp_executor → context_builder → answer."""

from orc.graph.builder import build_graph
from orc.graph.context import TurnContext
from orc.graph.state import TurnState

__all__ = ["TurnContext", "TurnState", "build_graph"]
