"""The state of one turn as it moves through the graph (checkpointed per conversation thread)."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from langchain_core.messages import BaseMessage


class TurnState(TypedDict, total=False):
    """Every field is written by one node, except the turn's input and the tool-round fields
    (``pending_tool_calls``, ``planning_messages``), which tool_router and answer both write. Which node runs
    next is not state: the node that decides says so with ``Command(goto=...)``.

    A new turn reads no checkpoint (:data:`orc.storage.checkpoints.NEW_TURN`), so it starts with empty channels and
    nothing leaks from the previous turn; the graph's input is only the turn's own fields, and
    :func:`fresh_turn_input` holds the values of the fields no node wrote. History comes from the conversation
    store.
    """

    # input
    question: str
    blob_names: list[str]
    focus_context: dict[str, str] | None
    # query_planner
    conversation_header: dict[str, Any] | None
    """The conversation header as read (with its ETag), so storing the turn needs no second read."""
    standalone_question: str
    uploaded_file_refs: list[dict[str, str]]
    last_mcp_tool_used: str | None
    historical_contexts: list[dict[str, str]]
    """Contexts the conversation focused on before this turn, oldest first, without the current focus."""
    # tool_router / mcp_executor / context_builder (and answer, when it asks for another tool round)
    available_documents: list[dict[str, Any]] | None
    """The documents available to the turn (for the prompt's context block); None until tool_router loads them."""
    pending_tool_calls: list[dict[str, Any]]
    planning_messages: list[BaseMessage]
    tool_results: list[dict[str, Any]]
    tool_records: list[dict[str, Any]]
    context_docs: list[dict[str, Any]]
    sources: list[dict[str, Any]]
    source_contexts: dict[str, dict[str, str]]
    """SourceRef → the context a source came from, for sources outside the session (origin, type, id)."""
    rounds: int
    cache: Literal["hit", "miss"] | None
    tool_model_calls: int
    tool_usage: dict[str, int]
    # answer
    answer: str
    citations: list[dict[str, Any]]


def fresh_turn_input(question: str, blob_names: list[str], focus_context: dict[str, str] | None) -> TurnState:
    """A new turn's state before any node runs: its input, and every other field at its starting value."""
    return TurnState(
        question=question,
        blob_names=blob_names,
        focus_context=focus_context,
        conversation_header=None,
        standalone_question=question,
        uploaded_file_refs=[],
        last_mcp_tool_used=None,
        historical_contexts=[],
        available_documents=None,
        pending_tool_calls=[],
        planning_messages=[],
        tool_results=[],
        tool_records=[],
        context_docs=[],
        sources=[],
        source_contexts={},
        rounds=0,
        cache=None,
        tool_model_calls=0,
        tool_usage={},
        answer="",
        citations=[],
    )
