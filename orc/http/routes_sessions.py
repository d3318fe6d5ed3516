"""Conversations of the caller (their context files are served by :mod:`orc.http.routes_context`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, status
from pydantic import BaseModel
from starlette.responses import Response

from orc.conversations import ConversationSummary
from orc.http.dependencies import Caller, Orc

router = APIRouter()


class SessionList(BaseModel):
    """The caller's conversations, most recent first."""

    sessions: list[ConversationSummary]


class SessionHistory(BaseModel):
    """A conversation's full history as messages in order."""

    conversation_id: str
    title: str
    messages: list[dict[str, Any]]


@router.get("/sessions", response_model=SessionList, summary="List your conversations")
async def list_sessions(orchestrator: Orc, principal: Caller) -> SessionList:
    """Title, message count, created and last-updated times of each conversation."""
    return SessionList(sessions=await orchestrator.list_sessions(principal))


@router.get("/sessions/{session_id}", response_model=SessionHistory, summary="Get a conversation")
async def get_session(session_id: str, orchestrator: Orc, principal: Caller) -> SessionHistory:
    """Every message with its citations, tool calls and file references."""
    conversation = await orchestrator.get_session(session_id, principal)
    messages: list[dict[str, Any]] = []
    for turn in conversation.turns:
        messages.append(turn.user.model_dump(mode="json"))
        messages.append(turn.assistant.model_dump(mode="json"))
    return SessionHistory(conversation_id=session_id, title=conversation.summary.title, messages=messages)


@router.delete("/sessions/{session_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a conversation")
async def delete_session(session_id: str, orchestrator: Orc, principal: Caller) -> Response:
    """Delete the conversation, its files and its checkpoints."""
    await orchestrator.delete_session(session_id, principal)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
