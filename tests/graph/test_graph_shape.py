"""The turn graph's shape is pinned: a change to the nodes or edges must be deliberate."""

from __future__ import annotations

from orc.graph import build_graph

EXPECTED_EDGES = {
    ("__start__", "query_planner", False),
    ("query_planner", "tool_router", False),
    ("tool_router", "mcp_executor", True),
    ("tool_router", "answer", True),
    ("mcp_executor", "context_builder", False),
    ("context_builder", "tool_router", True),
    ("context_builder", "answer", True),
    ("answer", "__end__", False),
}


def test_the_graph_has_the_five_nodes_of_the_turn_and_their_edges() -> None:
    drawing = build_graph().get_graph()

    assert set(drawing.nodes) == {
        "__start__",
        "query_planner",
        "tool_router",
        "mcp_executor",
        "context_builder",
        "answer",
        "__end__",
    }
    assert {(edge.source, edge.target, edge.conditional) for edge in drawing.edges} == EXPECTED_EDGES


def test_the_mermaid_drawing_is_stable() -> None:
    mermaid = build_graph().get_graph().draw_mermaid()

    assert "tool_router -.-> mcp_executor;" in mermaid
    assert "context_builder -.-> tool_router;" in mermaid
    assert "context_builder -.-> answer;" in mermaid
    assert "answer --> __end__;" in mermaid
