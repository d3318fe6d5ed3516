"""The one turn pipeline: the contract (request, result, the paused turn's request; the events are
:mod:`orc.graph.events`), ``prepare`` (checks and limits), ``runner`` (lock, context, graph loop, store), ``policy``
(admission and charge) and the ``service`` every turn comes in through (ask, stream, resume).

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
    from orc.turns.prepare import PreparedTurn, TurnLimits
    from orc.turns.service import Orchestrator, Turn, error_event, turn_failed

_LAZY = {
    "Orchestrator": "orc.turns.service",
    "Turn": "orc.turns.service",
    "error_event": "orc.turns.service",
    "turn_failed": "orc.turns.service",
    "PreparedTurn": "orc.turns.prepare",
    "TurnLimits": "orc.turns.prepare",
}

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
    "Turn",
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
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'orc.turns' has no attribute {name!r}")
