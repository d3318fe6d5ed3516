"""Pausing a turn for context (context handoff): deciding to ask, the pause itself, and what a resume brings.

``context_builder`` asks :func:`context_request` once, after the first evidence is in, and ``answer`` asks
:func:`context_request_before_tools` for a turn that ran no tool, before its answer request — only for a caller
that can show a request. When the rules ask for something, it tells the orchestrator (an internal stream event the
orchestrator turns into a stored request and the client's ``context_required``) and routes to
:func:`context_pause`, which calls LangGraph's ``interrupt()``: the run ends with a durable checkpoint, and the
turn resumes there, on any instance, with ``Command(resume=...)`` carrying what the user supplied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from orc.contracts import SourceSpan
from orc.conversations.context_requests import RequiredSlot
from orc.graph.context import TurnContext
from orc.graph.context_needs import needed_before_tools, needed_context
from orc.graph.state import TurnState
from orc.graph.tool_router import available_documents

PAUSE_EVENT = "_context_needed"
"""The internal stream event that tells the orchestrator the turn pauses (never sent to a client)."""


async def context_request(state: TurnState, ctx: TurnContext) -> list[RequiredSlot]:
    """The slots the turn should ask for, if any (the available documents are loaded only when it asks)."""
    question = state["question"]  # the user's own words: the retrieval query also carries the conversation's
    slots = needed_context(
        question,
        state.get("sources") or [],
        state.get("unavailable_documents") or [],
        state.get("available_documents"),
        state.get("blob_names") or [],
        state.get("history") or [],
    )
    if slots and state.get("available_documents") is None:
        # Suggestions offer the focus context's documents: read them only for a turn that asks.
        documents = await available_documents(state, ctx)
        slots = needed_context(
            question,
            state.get("sources") or [],
            state.get("unavailable_documents") or [],
            documents,
            state.get("blob_names") or [],
            state.get("history") or [],
        )
    return slots


async def context_request_before_tools(state: TurnState, ctx: TurnContext) -> list[RequiredSlot]:
    """The slots a turn that ran no tool should ask for before its answer request (a first turn with nothing to
    answer from, or one naming a file the conversation lacks)."""
    documents = state.get("available_documents")
    if documents is None:
        documents = await available_documents(state, ctx)
    if documents is None:
        return []  # the documents could not be listed: whether any exists is unknown, so the turn does not ask
    return needed_before_tools(state["question"], documents, state.get("blob_names") or [], state.get("history") or [])


def emit_pause(slots: list[RequiredSlot]) -> None:
    """Tell the orchestrator that this turn pauses for ``slots``."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # a node called directly, outside a run
        return
    writer({"type": PAUSE_EVENT, "required": [slot.model_dump(mode="json") for slot in slots]})


def context_pause(state: TurnState, runtime: Runtime[TurnContext]) -> TurnState:
    """Wait for the context (``interrupt``); on resume, what was supplied becomes the first of the sources (the
    resume value is the turn service's ``orc.turns.contract.Resumed``)."""
    del runtime
    asked = [slot.model_dump(mode="json") for slot in state.get("context_request") or []]
    resumed: Mapping[str, Any] = interrupt(asked)
    supplied = [SourceSpan.model_validate(item) for item in resumed.get("supplied", [])]
    return {
        "supplied": supplied,
        "sources": [*supplied, *(state.get("sources") or [])],
        "handoff_note": resumed.get("note", ""),
    }


__all__ = [
    "PAUSE_EVENT",
    "context_pause",
    "context_request",
    "context_request_before_tools",
    "emit_pause",
]
