"""The state of one turn as it moves through the graph (checkpointed per conversation thread).

The state holds models, never their dicts: the contract models (:mod:`orc.contracts`), the focus context and the
conversation header as read, and the graph's own records below (frozen models). Nothing is validated twice: a
model handed from node to node stays the same object, and pydantic does not validate an instance of a field's own
model again. The checkpointers deserialize only the types listed in :data:`CHECKPOINTED_TYPES` (registered by
:func:`orc.graph.builder.build_graph`).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langchain_core.messages import BaseMessage
from pydantic import BaseModel, ConfigDict

from orc.contracts import (
    CacheOutcome,
    Citation,
    FileRef,
    Grounding,
    PlaceToLook,
    RetrievalLegs,
    SourceSpan,
    ToolCallRecord,
    UnavailableDocument,
    Usage,
)
from orc.conversations import FocusContext
from orc.conversations.context_requests import RequiredSlot, SuggestedSupply, Suggestion
from orc.storage.ports import StoredItem


class _Record(BaseModel):
    # Pydantic rather than dataclasses: LangGraph's checkpoint serializer reaches a pydantic model at its second
    # check but a dataclass only after a runtime protocol check that costs more than building the model.
    model_config = ConfigDict(frozen=True)


class PlannedCall(_Record):
    """A tool call the executor will make: asked for by the model, or the forced ``document_chat``."""

    id: str
    name: str
    """The MCP tool name (``documents.search``)."""
    model_name: str
    """The name the model knows the tool by (``documents__search``); its ToolMessage answers under this name."""
    args: dict[str, Any]


class ToolResult(_Record):
    """What one tool call returned over MCP, before context_builder turns it into context."""

    id: str
    name: str
    model_name: str
    arguments: dict[str, Any]
    """The arguments sent, scope included."""
    structured: dict[str, Any] | None
    text: str
    is_error: bool
    duration_ms: float


class ToolAnswer(_Record):
    """What a tool concluded, for the answer prompt (its evidence is in the turn's sources)."""

    tool: str
    text: str
    error: bool = False


class SourceContext(_Record):
    """The context a source outside the session came from."""

    origin: str
    """``focus`` or ``historical``."""
    type: str
    id: str


class PriorTurn(_Record):
    """An earlier exchange of the conversation, as the answer prompt's history carries it."""

    question: str
    answer: str


class ListedDocument(_Record):
    """A document available to the turn, as the prompt's context block lists it."""

    filename: str
    context_type: str
    context_id: str
    status: str
    origin: str | None
    """``session``, ``focus`` or ``historical``."""
    is_focus: bool = False
    document_id: str | None = None


CHECKPOINTED_TYPES: tuple[type, ...] = (
    FocusContext,
    StoredItem,
    FileRef,
    SourceSpan,
    Citation,
    PlaceToLook,
    ToolCallRecord,
    Usage,
    PlannedCall,
    ToolResult,
    ToolAnswer,
    SourceContext,
    ListedDocument,
    PriorTurn,
    Grounding,
    RetrievalLegs,
    UnavailableDocument,
    RequiredSlot,
    Suggestion,
    SuggestedSupply,
)
"""Every class a turn's state holds besides LangChain's messages (which LangGraph trusts already)."""


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
    focus_context: FocusContext | None
    unavailable_documents: list[UnavailableDocument]
    """Attached files the answer cannot use (left out of the tools): the answer names them."""
    # query_planner
    conversation_header: StoredItem | None
    """The conversation header as read (with its ETag), so storing the turn needs no second read."""
    standalone_question: str
    uploaded_file_refs: list[FileRef]
    last_mcp_tool_used: str | None
    historical_contexts: list[FocusContext]
    """Contexts the conversation focused on before this turn, oldest first, without the current focus."""
    history: list[PriorTurn]
    """The recent exchanges (at most ``HISTORY_TURNS``), oldest first; the answer node budgets them."""
    prior_sources: list[SourceSpan]
    """The spans the previous answer cited, kept as evidence so a follow-up ("and the second one?") can use them."""
    # tool_router / mcp_executor / context_builder (and answer, when it asks for another tool round)
    available_documents: list[ListedDocument] | None
    """The documents available to the turn (for the prompt's context block); None until tool_router loads them."""
    pending_tool_calls: list[PlannedCall]
    planning_messages: list[BaseMessage]
    tool_results: list[ToolResult]
    tool_records: list[ToolCallRecord]
    context_docs: list[ToolAnswer]
    sources: list[SourceSpan]
    source_contexts: dict[str, SourceContext]
    """SourceRef → the context a source came from, for sources outside the session."""
    rounds: int
    cache: CacheOutcome | None
    tool_model_calls: int
    tool_usage: Usage
    retrieval_rounds: int
    retrieval: RetrievalLegs | None
    """Which retrieval legs ran (the last document search of the turn)."""
    context_request: list[RequiredSlot] | None
    """The slots the turn asks the user for, when it pauses (context handoff)."""
    supplied: list[SourceSpan]
    """What the user supplied when the paused turn resumed, as sources to cite."""
    handoff_note: str
    """A sentence for the answer about the context request (answered without it, and why)."""
    """How many times the turn retrieved evidence for attached files (a second round when the first was weak)."""
    # answer
    answer: str
    citations: list[Citation]
    places_to_look: list[PlaceToLook]
    """Under a decline, the passages that came closest (never citations: they claim nothing)."""
    grounding: Grounding | None
    suggestions: list[str]
    sanitized: dict[str, int]
    """What the output policy removed from the answer, its quotes and suggestions (``metadata.sanitized``)."""


def fresh_turn_input(
    question: str,
    blob_names: list[str],
    focus_context: FocusContext | None,
    unavailable_documents: list[UnavailableDocument] | None = None,
) -> TurnState:
    """A new turn's state before any node runs: its input, and every other field at its starting value."""
    return TurnState(
        question=question,
        blob_names=blob_names,
        focus_context=focus_context,
        unavailable_documents=unavailable_documents or [],
        conversation_header=None,
        standalone_question=question,
        uploaded_file_refs=[],
        last_mcp_tool_used=None,
        historical_contexts=[],
        history=[],
        prior_sources=[],
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
        tool_usage=Usage(),
        retrieval_rounds=0,
        retrieval=None,
        context_request=None,
        supplied=[],
        handoff_note="",
        answer="",
        citations=[],
        places_to_look=[],
        grounding=None,
        suggestions=[],
        sanitized={},
    )
