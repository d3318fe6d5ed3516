"""Conversations of the caller (their context files are served by :mod:`orc.http.routes_context`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, status
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from orc.conversations import ConversationSummary, Feedback, Turn
from orc.conversations.export import MEDIA_TYPES, ExportFormat
from orc.conversations.listing import listed_messages
from orc.conversations.titles import title_from_question
from orc.errors import NotFound
from orc.handoff import MAX_LIMIT, ArtifactKind, ArtifactPage
from orc.http.dependencies import Artifacts, Caller, Conversations, Keys, Orc, Requests
from orc.http.idempotent import KEY_PARAMETER, idempotent

IDEMPOTENCY_HEADER = {"parameters": [KEY_PARAMETER]}

router = APIRouter()


class SessionList(BaseModel):
    """The caller's conversations, most recent first."""

    sessions: list[ConversationSummary]


class SessionHistory(BaseModel):
    """A conversation's full history as messages in order."""

    conversation_id: str
    title: str
    messages: list[dict[str, Any]] = Field(
        description="Every message in order; a question paused on an open context request comes last, with "
        "`status: waiting_context` and its `request_id`, until it is answered."
    )
    context_requests: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Requests of paused turns, with what was supplied (who, when, what) and how each ended; a "
        "pending one's question is waiting_context.",
    )


@router.get("/sessions", response_model=SessionList, summary="List your conversations")
async def list_sessions(sessions: Conversations, principal: Caller) -> SessionList:
    """Title, message count, created and last-updated times of each conversation."""
    return SessionList(sessions=await sessions.summaries(principal))


@router.get("/sessions/{session_id}", response_model=SessionHistory, summary="Get a conversation")
async def get_session(session_id: str, sessions: Conversations, handoff: Requests, principal: Caller) -> SessionHistory:
    """Every message with its citations, tool calls and file references."""
    turns: Sequence[Turn] = ()
    try:
        conversation = await sessions.get(principal, session_id)
    except NotFound:
        # A conversation whose first turn paused has no stored turn yet, but its request is part of its history.
        requests = await handoff.history(principal, session_id)
        if not requests:
            raise
        title = ""
    else:
        requests = await handoff.history(principal, session_id)
        turns, title = conversation.turns, conversation.summary.title
    if not turns and requests:
        # Its first question waits on its request (in a session with files or without): that question titles it.
        title = title_from_question(str(requests[0]["question"]))
    return SessionHistory(
        conversation_id=session_id, title=title, messages=listed_messages(turns, requests), context_requests=requests
    )


@router.delete("/sessions/{session_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a conversation")
async def delete_session(session_id: str, orchestrator: Orc, principal: Caller) -> Response:
    """Delete the conversation, its files and its checkpoints."""
    await orchestrator.delete_session(session_id, principal)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


class RenameBody(BaseModel):
    """A conversation's new title."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(description="The title to show (1-200 characters).", max_length=4000)


class FeedbackBody(BaseModel):
    """A rating of one answer; a second rating of the same answer replaces the first."""

    model_config = ConfigDict(extra="forbid")

    rating: Literal["up", "down"]
    comment: str | None = Field(default=None, max_length=2000)


class FeedbackRecord(BaseModel):
    """The feedback as stored."""

    conversation_id: str
    message_id: str
    rating: Literal["up", "down"]
    comment: str | None
    created_at: str


@router.patch(
    "/sessions/{session_id}",
    response_model=ConversationSummary,
    summary="Rename a conversation",
    openapi_extra=IDEMPOTENCY_HEADER,
)
async def rename_session(
    session_id: str, body: RenameBody, request: Request, sessions: Conversations, principal: Caller, keys: Keys
) -> Response:
    """Set the title the conversation is listed with; a generated title never replaces it afterwards."""
    parts = {"route": "rename", "session": session_id, "body": body.model_dump()}
    return await idempotent(
        request, principal, keys, parts, 200, lambda: sessions.rename(principal, session_id, body.title)
    )


@router.post(
    "/sessions/{session_id}/messages/{message_id}/feedback",
    response_model=FeedbackRecord,
    summary="Rate an answer",
    openapi_extra=IDEMPOTENCY_HEADER,
)
async def give_feedback(
    session_id: str,
    message_id: str,
    body: FeedbackBody,
    request: Request,
    sessions: Conversations,
    principal: Caller,
    keys: Keys,
) -> Response:
    """``up`` or ``down`` with an optional comment, one per answer: rating it again replaces the earlier rating.
    The feedback shows in the conversation's history and exports."""

    async def run() -> FeedbackRecord:
        feedback = Feedback(rating=body.rating, comment=body.comment)
        stored = await sessions.give_feedback(principal, session_id, message_id, feedback)
        return FeedbackRecord(conversation_id=session_id, message_id=message_id, **stored.model_dump())

    parts = {"route": "feedback", "session": session_id, "message": message_id, "body": body.model_dump()}
    return await idempotent(request, principal, keys, parts, 200, run)


@router.get(
    "/sessions/{session_id}/export",
    summary="Export a conversation",
    response_class=Response,
    responses={
        200: {
            "content": {media: {} for media in MEDIA_TYPES.values()},
            "description": "The conversation with its citations as footnotes quoting the spans.",
        }
    },
)
async def export_session(
    session_id: str,
    sessions: Conversations,
    principal: Caller,
    format: Annotated[ExportFormat, Query(description="markdown, pdf or json")] = "markdown",
) -> Response:
    """The whole conversation as Markdown, PDF or JSON, as a download."""
    data, name = await sessions.export(principal, session_id, format)
    return Response(
        data,
        media_type=MEDIA_TYPES[format],
        headers={"Content-Disposition": f'attachment; filename="{name}"', "Cache-Control": "no-store"},
    )


@router.get(
    "/sessions/{session_id}/artifacts",
    response_model=ArtifactPage,
    summary="List what can be supplied to a context request",
)
async def list_artifacts(
    session_id: str,
    artifacts: Artifacts,
    principal: Caller,
    kind: Annotated[ArtifactKind | None, Query(description="Only documents, digest facts or earlier answers.")] = None,
    cursor: Annotated[str | None, Query(max_length=200, description="next_cursor of the previous page.")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    q: Annotated[
        str | None, Query(max_length=200, description="Only items whose title or detail hold these words.")
    ] = None,
) -> ArtifactPage:
    """The session's documents (its files, then its focus and historical contexts' documents), the facts of its
    aggregate digest with their SourceRefs, and its earlier answers, newest first, paged. Each item's ``supply``
    is the payload that attaches it to a context request (add the request's ``slot``)."""
    return await artifacts.page(principal, session_id, kind=kind, cursor=cursor, limit=limit, query=q)
