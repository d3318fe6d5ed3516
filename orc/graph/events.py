"""The typed event union a turn streams (DESIGN §5): what the graph's nodes emit and clients read."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

from orc.contracts import Citation

# Stream events (DESIGN §5). TypedDicts: an event is the plain dict the HTTP layer serializes, so building one
# costs nothing beyond the dict, and mypy narrows the union on ``event["type"]``.


class ProgressEvent(TypedDict):
    """Which step the turn is in, what it does, and roughly how far the turn is."""

    type: Literal["progress"]
    step: str
    message: str
    percent: int


class ToolEvent(TypedDict):
    """A tool call starting (``running``) or finished (``ok``/``error``, with its duration)."""

    type: Literal["tool"]
    name: str
    status: Literal["running", "ok", "error"]
    duration_ms: float


class TokenEvent(TypedDict):
    """A piece of the answer, as the model streams it."""

    type: Literal["token"]
    text: str


class CitationEvent(TypedDict):
    """One citation of the answer (the fields of :class:`orc.contracts.Citation`)."""

    type: Literal["citation"]
    ref: str
    document: str
    document_id: str | None
    span_id: str
    page: int | None
    quote: str
    section: str | None


class ContextSuggestion(TypedDict):
    """One-click context: ``supply`` is the payload to send for the slot (a document, a span or a text)."""

    kind: Literal["document", "span", "answer"]
    label: str
    supply: dict[str, str | None]


class ContextRequest(TypedDict):
    """One piece of context a paused turn asks for."""

    slot: str
    kind: Literal["document", "evidence"]
    description: str
    suggestions: list[ContextSuggestion]
    phase: Literal["before_tools", "after_tools", "answer"]
    artifact_type: Literal["document", "passage", "data"]
    key_path: str | None
    size_limit: int
    urgency: Literal["low", "normal", "high"]


class ContextRequiredEvent(TypedDict):
    """The turn paused for context the caller must supply (handoff, DESIGN §2); the stream ends after it."""

    type: Literal["context_required"]
    conversation_id: str
    user_message_id: str
    request_id: str
    required: list[ContextRequest]
    expires_at: str
    redactions: int


class ContextUpdateEvent(TypedDict):
    """A paused turn's request changed: part of it was supplied (``status`` ``pending``, ``missing`` says what is
    still needed), its reminder is due (``reminder``, before the deadline), or it ended (``resolved``,
    ``cancelled``, ``superseded``, ``expired``)."""

    type: Literal["context_update"]
    request_id: str
    status: str
    supplied: list[str]
    missing: list[str]
    at: NotRequired[str]
    """When it happened (reminders and endings)."""
    note: NotRequired[str]
    """A sentence for the user (a reminder's: how long the answer still waits)."""
    expires_at: NotRequired[str]


class ContextResolvedEvent(TypedDict):
    """A paused turn goes on: with what was supplied, without it (``run_without``), or after its deadline."""

    type: Literal["context_resolved"]
    request_id: str
    outcome: Literal["supplied", "run_without", "expired"]


class FinalEvent(TypedDict):
    """The turn's result (:class:`TurnResult` as JSON) and its usage, the stream's last event."""

    type: Literal["final"]
    conversation_id: str
    message_id: str
    created_at: str
    answer: str
    citations: list[dict[str, Any]]
    places_to_look: list[dict[str, Any]]
    files: list[dict[str, Any]]
    metadata: dict[str, Any]
    usage: dict[str, Any]
    suggestions: list[str]


class ErrorEvent(TypedDict):
    """A failed turn, the stream's last event: a stable code, a message safe to show, and when to retry."""

    type: Literal["error"]
    code: str
    message: str
    status: int
    retry_after: NotRequired[float]


Event = (
    ProgressEvent
    | ToolEvent
    | TokenEvent
    | CitationEvent
    | ContextRequiredEvent
    | ContextUpdateEvent
    | ContextResolvedEvent
    | FinalEvent
    | ErrorEvent
)
"""A stream event: a JSON object discriminated by its ``type``."""

EventType = Literal[
    "progress", "tool", "token", "citation", "context_required", "context_update", "context_resolved", "final", "error"
]


def citation_event(citation: Citation) -> CitationEvent:
    """The ``citation`` event of one citation."""
    return CitationEvent(
        type="citation",
        ref=citation.ref,
        document=citation.document,
        document_id=citation.document_id,
        span_id=citation.span_id,
        page=citation.page,
        quote=citation.quote,
        section=citation.section,
    )
