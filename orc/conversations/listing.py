"""A conversation's messages as clients list them (``GET /api/sessions/{id}``): the stored turns in order, then a
question still waiting on its context request.

A paused turn stores nothing in the conversation until it is answered (a turn is stored whole), yet its question
was asked: while its request is open the question is listed as a user message of its own, marked
``waiting_context`` and naming its ``request_id``, so a client rendering ``messages`` shows every question the
user asked. Nothing here reads storage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orc.conversations.models import Turn

WAITING = "waiting_context"
"""The ``status`` of a user message whose turn is paused on a context request."""


def waiting_message(request: Mapping[str, Any]) -> dict[str, Any]:
    """The question of an open context ``request`` (as :meth:`ContextRequestRecord.public` shows it) as a user
    message."""
    return {
        "message_id": request["user_message_id"],
        "role": "user",
        "content": request["question"],
        "blob_names": list(request.get("blob_names") or []),
        "created_at": request["created_at"],
        "status": WAITING,
        "request_id": request["request_id"],
    }


def listed_messages(turns: Sequence[Turn], requests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each stored turn's user and assistant message, oldest first, then the question of each request still
    pending (a newer message supersedes a pending request, so an open one always follows the last turn)."""
    messages: list[dict[str, Any]] = []
    for turn in turns:
        messages.append(turn.user.model_dump(mode="json"))
        messages.append(turn.assistant.model_dump(mode="json"))
    pending = sorted((r for r in requests if r.get("status") == "pending"), key=lambda r: str(r["created_at"]))
    messages += [waiting_message(request) for request in pending]
    return messages


__all__ = ["WAITING", "listed_messages", "waiting_message"]
