"""The request and result of one turn, as Python callers, HTTP clients and stored history see them."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from orc.contracts import (
    CacheOutcome,
    Citation,
    FileRef,
    Grounding,
    PlaceToLook,
    RetrievalLegs,
    ToolCallRecord,
    UnavailableDocument,
    Usage,
)
from orc.conversations import FocusContext
from orc.conversations.context_requests import ContextRequestRecord, RequiredSlot
from orc.graph.events import FinalEvent


class Resumed(TypedDict):
    """What a paused turn is resumed with (the ``Command(resume=...)`` value, checkpointed: plain JSON values); the
    graph's pause reads ``supplied`` and ``note``."""

    action: Literal["supplied", "run_without"]
    request_id: str
    outcome: Literal["supplied", "run_without", "expired"]
    supplied: list[dict[str, Any]]
    """SourceSpan fields of each supplied passage."""
    note: str
    """A sentence for the answer (answered without the context, and why); empty when context was supplied."""


class TurnRequest(BaseModel):
    """One question in a conversation (the body of ``POST /api/orc``)."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The user's question.")
    conversation_id: str | None = Field(default=None, description="Omit to start a new conversation.")
    blob_names: list[str] = Field(
        default_factory=list, description="Files of this conversation attached to this turn (by upload name)."
    )
    context: FocusContext | None = Field(
        default=None,
        description=(
            'Optional focus context, `{"type": "organization" | "folder" | "usecase", "id": "..."}` (for example'
            ' `{"type": "folder", "id": "legal"}`). Besides the conversation\'s own files the turn sees: for a'
            " usecase, its documents, its folder's and the organization's; for a folder, the folder's, the"
            " organization's and those of every usecase under it; for the organization, everything. The answer"
            " prioritizes the focus context. The context must exist (create it with"
            " `PUT /api/contexts/{type}/{id}`), else 404 `context_not_found`. Omitted: the conversation's files"
            " and the contexts it focused on earlier."
        ),
    )
    model: str | None = Field(
        default=None,
        max_length=64,
        description="An alias from the server's model allow-list (ORC_MODELS); omit for the default model. "
        "Any other value is refused with 400 model_not_allowed.",
    )
    context_requests: Literal["allow", "never"] | None = Field(
        default=None,
        description='"allow": a turn that lacks context may pause and answer {status: "context_required", ...} '
        '(supply it with POST /api/sessions/{id}/context-requests/{request_id}/supply). "never": always an '
        'answer, which says what is missing. Omitted: the server\'s default (ORC_CONTEXT_REQUESTS, "never").',
    )


class TurnMetadata(BaseModel):
    """How the answer was produced."""

    tool: str | None = Field(description="The last MCP tool used in this turn.")
    cache: CacheOutcome | None = Field(description="document_chat's file-id cache outcome.")
    model: str
    model_calls: int = Field(description="Model requests made in this turn, including those inside tools.")
    usage: Usage
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    elapsed_ms: float
    focus_context: FocusContext | None = Field(default=None, description="The context the turn focused on.")
    historical_contexts: list[FocusContext] = Field(
        default_factory=list,
        description="Contexts the conversation focused on before this turn, in order of first use (oldest first).",
    )
    grounding: Grounding | None = Field(
        default=None, description="Cited and uncited sentences of the answer, and the made-up markers removed."
    )
    unavailable_documents: list[UnavailableDocument] = Field(
        default_factory=list,
        description="Attached files the answer could not use (processing failed, upload unfinished), and why.",
    )
    retrieval_rounds: int = Field(
        default=0, description="Retrieval rounds over the attached files: 2 when weak evidence was retrieved again."
    )
    retrieval: RetrievalLegs | None = Field(
        default=None, description='Which retrieval legs ran, e.g. {"legs": ["lexical", "vector"], "fusion": "rrf"}.'
    )
    sanitized: dict[str, int] = Field(
        default_factory=dict,
        description="What the server's output policy removed from the answer, its quotes and suggestions: raw HTML "
        "tags escaped (html), images from hosts not allowed (images), links with a refused scheme (links).",
    )


class TurnResult(BaseModel):
    """The answer of one turn."""

    status: Literal["answered"] = "answered"
    conversation_id: str
    message_id: str = Field(description="The stored answer's id (``msg-<n>-assistant``): feedback names it.")
    created_at: str = Field(description="When the answer was stored (UTC, ISO 8601).")
    answer: str
    citations: list[Citation]
    places_to_look: list[PlaceToLook] = Field(
        default_factory=list,
        description="Only when the answer declines: up to three retrieved passages that came closest to the "
        "question, best first, so the reader knows where to read on. They claim nothing (unlike citations).",
    )
    files: list[FileRef]
    metadata: TurnMetadata
    suggestions: list[str] = Field(
        default_factory=list, description="Up to three follow-up questions the documents can answer."
    )


class ContextRequired(BaseModel):
    """A turn that paused for context: what it needs, and where to supply it."""

    status: Literal["context_required"] = "context_required"
    conversation_id: str
    user_message_id: str
    request_id: str
    required: list[RequiredSlot]
    expires_at: str = Field(description="When the turn answers without the context if none is supplied.")
    redactions: int = Field(default=0, description="Secrets redacted from the suggestions before they were offered.")

    @classmethod
    def of(cls, record: ContextRequestRecord) -> ContextRequired:
        """What a turn that paused with ``record`` answers."""
        return cls(
            conversation_id=record.conversation_id,
            user_message_id=record.user_message_id,
            request_id=record.request_id,
            required=record.required,
            expires_at=record.expires_at,
            redactions=record.redactions,
        )


def final_event(result: TurnResult) -> FinalEvent:
    """The ``final`` event of a turn's result."""
    body = result.model_dump(mode="json")
    return FinalEvent(
        type="final",
        conversation_id=body["conversation_id"],
        message_id=body["message_id"],
        created_at=body["created_at"],
        answer=body["answer"],
        citations=body["citations"],
        places_to_look=body["places_to_look"],
        files=body["files"],
        metadata=body["metadata"],
        usage=body["metadata"]["usage"],
        suggestions=body["suggestions"],
    )
