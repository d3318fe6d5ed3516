"""The turn graph's shape is pinned: a change to the nodes or edges must be deliberate."""

from __future__ import annotations

from orc.graph import build_graph
from orc.graph.tool_router import after_answer, after_planner

EXPECTED_EDGES = {
    ("__start__", "query_planner", False),
    ("query_planner", "tool_router", True),
    ("query_planner", "mcp_executor", True),
    ("tool_router", "mcp_executor", True),
    ("tool_router", "answer", True),
    ("mcp_executor", "context_builder", False),
    ("context_builder", "answer", True),
    ("context_builder", "context_pause", True),
    ("context_pause", "answer", False),
    ("answer", "mcp_executor", True),
    ("answer", "context_pause", True),
    ("answer", "__end__", True),
}


def test_the_graph_has_the_five_nodes_of_the_turn_the_pause_and_their_edges() -> None:
    drawing = build_graph().get_graph()

    assert set(drawing.nodes) == {
        "__start__",
        "query_planner",
        "tool_router",
        "mcp_executor",
        "context_builder",
        "context_pause",
        "answer",
        "__end__",
    }
    assert {(edge.source, edge.target, edge.conditional) for edge in drawing.edges} == EXPECTED_EDGES


def test_the_mermaid_drawing_is_stable() -> None:
    mermaid = build_graph().get_graph().draw_mermaid()

    assert "query_planner -.-> mcp_executor;" in mermaid
    assert "tool_router -.-> mcp_executor;" in mermaid
    assert "context_builder -.-> answer;" in mermaid
    assert "context_builder -.-> context_pause;" in mermaid
    assert "answer -.-> mcp_executor;" in mermaid
    assert "answer -.-> __end__;" in mermaid


def test_nodes_route_with_commands_so_no_edge_function_copies_the_state() -> None:
    # A conditional edge's function reads a copy of every channel with the node's writes applied; the nodes
    # that choose say where to go themselves (Command(goto=...)), which the drawing above still shows.
    assert not any(build_graph().builder.branches.values())


def test_attached_files_skip_the_router_and_other_turns_go_through_it() -> None:
    assert after_planner({"blob_names": ["lease.txt"]}) == "mcp_executor"
    assert after_planner({"blob_names": []}) == "tool_router"
    # An answer that asked for more tools goes back to the executor; any other ends the turn.
    assert after_answer([{"id": "call-1", "name": "documents.search", "args": {}}]) == "mcp_executor"
    assert after_answer([]) == "__end__"
