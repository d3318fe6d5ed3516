"""The request and result of one turn, as Python callers, HTTP clients and stored history see them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from orc.contracts import CacheOutcome, Citation, FileRef, ToolCallRecord, Usage
from orc.conversations import FocusContext


class TurnRequest(BaseModel):
    """One question in a conversation (the body of ``POST /api/orc``)."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The user's question.")
    conversation_id: str | None = Field(default=None, description="Omit to start a new conversation.")
    blob_names: list[str] = Field(
        default_factory=list, description="Files of this conversation attached to this turn (by upload name)."
    )
    context: FocusContext | None = Field(default=None, description="Optional focus context.")


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


class TurnResult(BaseModel):
    """The answer of one turn."""

    conversation_id: str
    answer: str
    citations: list[Citation]
    files: list[FileRef]
    metadata: TurnMetadata


EventType = Literal["progress", "tool", "token", "citation", "context_required", "final", "error"]
Event = dict[str, Any]
"""A stream event: a JSON object with a ``type`` (DESIGN §5)."""
