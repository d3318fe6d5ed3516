"""The ``request_context`` tool: a real model asks for the context it lacks instead of guessing (context handoff).

Offered with the answer request only to a caller that can show a request (``"context_requests": "allow"``) and
only to a real model (the offline model relies on the rules of :mod:`orc.graph.context_needs`). The model calls it
with what it needs, why, the kind of artifact, a size limit and an urgency; the turn then pauses like a turn the
rules stopped, with the model's request as its slot and the same one-click suggestions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import BaseModel, Field

from orc.conversations.context_requests import DEFAULT_SIZE_LIMIT, RequiredSlot
from orc.graph.context_needs import suggestions_for
from orc.graph.state import TurnState

REQUEST_CONTEXT = "request_context"


class RequestContextArguments(BaseModel):
    """What the model asks the user for."""

    need: str = Field(description="What you need, precisely (for example: the parking clause of the lease).")
    why: str = Field(description="Why the sources you have do not answer the question.")
    kind: Literal["document", "passage", "data"] = Field(
        default="passage", description="A whole document, a passage of text, or figures/data."
    )
    size_limit: int | None = Field(default=None, description="At most this many characters are useful.")
    urgency: Literal["low", "normal", "high"] = "normal"


def _never_run(**_: Any) -> str:
    raise RuntimeError("request_context pauses the turn; it is never executed as a tool")


REQUEST_CONTEXT_TOOL: BaseTool = StructuredTool.from_function(
    func=_never_run,
    name=REQUEST_CONTEXT,
    description=(
        "Ask the user for context the sources lack, instead of guessing or answering that you could not find it. "
        "The turn pauses until the user supplies it, then you answer with it."
    ),
    args_schema=RequestContextArguments,
)


def requested_context(reply: BaseMessage | None, state: TurnState) -> list[RequiredSlot]:
    """The slots of the model's ``request_context`` calls in ``reply`` (none when it made none)."""
    if not isinstance(reply, AIMessage):
        return []
    slots = []
    for number, call in enumerate(call for call in reply.tool_calls if call["name"] == REQUEST_CONTEXT):
        try:
            asked = RequestContextArguments.model_validate(call["args"])
        except ValueError:
            continue  # malformed arguments: treated as no request
        limit = min(asked.size_limit, DEFAULT_SIZE_LIMIT) if asked.size_limit and asked.size_limit > 0 else None
        slots.append(
            RequiredSlot(
                slot=f"model:{number + 1}",
                kind="document" if asked.kind == "document" else "evidence",
                description=f"{asked.need.strip()}. {asked.why.strip()}"[:1000],
                suggestions=suggestions_for(state),
                phase="answer",
                artifact_type=asked.kind,
                size_limit=limit or DEFAULT_SIZE_LIMIT,
                urgency=asked.urgency,
            )
        )
    return slots


def with_request_context(tools: Sequence[BaseTool]) -> list[BaseTool]:
    """The answer request's tools plus ``request_context``."""
    return [*tools, REQUEST_CONTEXT_TOOL]
