"""Follow a pending context request: ``GET /api/sessions/{id}/context-requests/{request_id}/events``.

The paused turn's stream ends with ``context_required``; a client showing the request opens this one for what
happens next, as ``context_update`` events (NDJSON, or server-sent events with ``Accept: text/event-stream``): the
reminder before the deadline (``ORC_CONTEXT_REQUEST_REMINDER``), then how the request ended. See
:mod:`orc.handoff.reminders`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from starlette.responses import StreamingResponse

from orc.handoff.reminders import follow
from orc.http.dependencies import Caller, Requests
from orc.http.streaming import MEDIA_TYPES, encode, negotiate
from orc.turns import Event

router = APIRouter()


@router.get(
    "/sessions/{session_id}/context-requests/{request_id}/events",
    summary="Follow a context request (reminder, end)",
    responses={200: {"content": {"application/x-ndjson": {}, "text/event-stream": {}}}},
)
async def request_events(
    session_id: str, request_id: str, request: Request, handoff: Requests, principal: Caller
) -> StreamingResponse:
    """``context_update`` events: ``reminder`` when it is due (with a note saying how long the answer still waits),
    then the end (``resolved``, ``cancelled``, ``superseded`` or ``expired``); the stream ends with the request.
    404 ``context_request_not_found`` for a request the caller does not have."""
    fmt = negotiate(request.headers.get("accept", "")) or "ndjson"
    updates = follow(handoff, principal, session_id, request_id)
    first = await anext(updates)  # a missing request is a 404 before the stream starts

    async def events() -> AsyncIterator[Event]:
        yield first
        async for update in updates:
            yield update

    return StreamingResponse(
        encode(events(), fmt),
        media_type=MEDIA_TYPES[fmt],
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
