"""Context handoff: the life cycle of a paused turn's context request (pause, supply, run without it, cancel,
supersede, expire) and the session's artifacts a user can supply. It returns a resumption; ``orc.turns`` runs it."""

from orc.handoff.artifacts import MAX_LIMIT, ArtifactKind, ArtifactPage, SessionArtifacts
from orc.handoff.lifecycle import (
    MAX_PAYLOADS,
    MAX_TEXT_CHARS,
    ContextUpdate,
    Handoff,
    Move,
    Resumption,
    SuppliedText,
    SupplyBody,
    SupplyPayload,
    running_without,
    supplying,
)

__all__ = [
    "MAX_LIMIT",
    "MAX_PAYLOADS",
    "MAX_TEXT_CHARS",
    "ArtifactKind",
    "ArtifactPage",
    "ContextUpdate",
    "Handoff",
    "Move",
    "Resumption",
    "SessionArtifacts",
    "SuppliedText",
    "SupplyBody",
    "SupplyPayload",
    "running_without",
    "supplying",
]
