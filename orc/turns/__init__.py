"""The one turn pipeline: the contract (request, result, the paused turn's request; the events are
:mod:`orc.graph.events`), and the service that runs every turn.

The contract's names are imported eagerly (they are light); the service, which pulls in LangGraph, only when asked
for, so ``from orc.turns import TurnRequest`` stays cheap for clients and the CLI's ``--help``.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from orc.graph.events import (
    CitationEvent,
    ContextRequest,
    ContextRequiredEvent,
    ContextResolvedEvent,
    ContextSuggestion,
    ContextUpdateEvent,
    ErrorEvent,
    Event,
    EventType,
    FinalEvent,
    ProgressEvent,
    TokenEvent,
    ToolEvent,
    citation_event,
)
from orc.turns.contract import ContextRequired, TurnMetadata, TurnRequest, TurnResult, final_event

if TYPE_CHECKING:
    from orc.turns.service import Orchestrator, PreparedTurn, TurnLimits, error_event, turn_failed

_SERVICE = {"Orchestrator", "PreparedTurn", "TurnLimits", "error_event", "turn_failed"}

__all__ = [
    "CitationEvent",
    "ContextRequest",
    "ContextRequired",
    "ContextRequiredEvent",
    "ContextResolvedEvent",
    "ContextSuggestion",
    "ContextUpdateEvent",
    "ErrorEvent",
    "Event",
    "EventType",
    "FinalEvent",
    "Orchestrator",
    "PreparedTurn",
    "ProgressEvent",
    "TokenEvent",
    "ToolEvent",
    "TurnLimits",
    "TurnMetadata",
    "TurnRequest",
    "TurnResult",
    "citation_event",
    "error_event",
    "final_event",
    "turn_failed",
]


def __getattr__(name: str) -> Any:
    if name in _SERVICE:
        return getattr(import_module("orc.turns.service"), name)
    raise AttributeError(f"module 'orc.turns' has no attribute {name!r}")
