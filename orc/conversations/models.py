"""The messages of a conversation as stored and shown: user and assistant messages, turns, summaries."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from orc.contracts import Citation, FileRef, PlaceToLook, ToolCallRecord, Usage

_MESSAGE_ID = re.compile(r"msg-([1-9][0-9]{0,11})-(user|assistant)")


class FocusContext(BaseModel):
    """The context a turn focuses on: an organization, one of its folders or a usecase inside a folder."""

    # A misspelt key ("ID", "kind") would otherwise be dropped silently and the turn focus on something else.
    model_config = ConfigDict(extra="forbid")

    type: Literal["organization", "folder", "usecase"]
    id: str


class Feedback(BaseModel):
    """A user's rating of an answer; one per message (a second rating replaces the first)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rating: Literal["up", "down"]
    comment: str | None = Field(default=None, max_length=2000)
    created_at: str = ""


class UserMessage(BaseModel):
    """What the user asked in a turn."""

    model_config = ConfigDict(frozen=True)

    message_id: str = ""
    """``msg-<seq>-user``: filled from the turn's sequence number when the turn is stored (see :class:`Turn`)."""
    role: Literal["user"] = "user"
    content: str
    blob_names: list[str] = Field(default_factory=list)
    created_at: str


class AssistantMessage(BaseModel):
    """What orc answered, with everything the next turn is seeded from."""

    model_config = ConfigDict(frozen=True)

    message_id: str = ""
    """``msg-<seq>-assistant``: filled from the turn's sequence number (see :class:`Turn`)."""
    role: Literal["assistant"] = "assistant"
    content: str
    citations: list[Citation] = Field(default_factory=list)
    places_to_look: list[PlaceToLook] = Field(default_factory=list)
    """Under a decline, the passages that came closest (see :attr:`orc.turns.TurnResult.places_to_look`)."""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    uploaded_file_refs: list[FileRef] = Field(default_factory=list)
    last_mcp_tool_used: str | None = None
    focus_context: FocusContext | None = None
    model: str | None = None
    usage: Usage = Field(default_factory=Usage)
    feedback: Feedback | None = None
    created_at: str


class Turn(BaseModel):
    """One stored exchange. Frozen: a parsed turn is shared by every read of the same stored version.

    Message ids come from the turn's sequence number, which is unique in its conversation, so turns stored
    before ids existed get the same ids as new ones and a client can address any message.
    """

    model_config = ConfigDict(frozen=True)

    seq: int
    user: UserMessage
    assistant: AssistantMessage

    @model_validator(mode="after")
    def _message_ids(self) -> Turn:
        user_id, assistant_id = message_ids(self.seq)
        if self.user.message_id != user_id:
            object.__setattr__(self, "user", self.user.model_copy(update={"message_id": user_id}))
        if self.assistant.message_id != assistant_id:
            object.__setattr__(self, "assistant", self.assistant.model_copy(update={"message_id": assistant_id}))
        return self


def message_ids(seq: int) -> tuple[str, str]:
    """The ids of turn ``seq``'s user and assistant messages."""
    return f"msg-{seq}-user", f"msg-{seq}-assistant"


def turn_of(message_id: str) -> tuple[int, Literal["user", "assistant"]] | None:
    """The turn number and role a message id names; ``None`` for anything that is not a message id."""
    match = _MESSAGE_ID.fullmatch(message_id)
    if match is None:
        return None
    return int(match.group(1)), "user" if match.group(2) == "user" else "assistant"


class ConversationSummary(BaseModel):
    """A conversation as listed: title, message count and times."""

    conversation_id: str
    title: str
    message_count: int
    created_at: str
    updated_at: str


class Conversation(BaseModel):
    """A conversation with its whole history, oldest turn first."""

    summary: ConversationSummary
    turns: list[Turn]
