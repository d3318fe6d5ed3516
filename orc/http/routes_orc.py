"""``POST /api/orc``: one turn, as JSON or as a stream of events."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from orc.http.dependencies import Caller, Keys, Orc
from orc.http.openapi_events import STREAM_RESPONSES
from orc.http.turn_responses import turn_response
from orc.turns import ContextRequired, TurnRequest, TurnResult

router = APIRouter()


@router.post(
    "/orc",
    response_model=TurnResult | ContextRequired,
    summary="Ask a question in a conversation",
    responses={
        **STREAM_RESPONSES,
        429: {"description": "Over the caller's rate limit, token quota or concurrent turns (see Retry-After)."},
    },
)
async def ask(
    body: TurnRequest, request: Request, orchestrator: Orc, principal: Caller, keys: Keys
) -> Response | TurnResult | ContextRequired:
    """Answer one question. ``Accept: application/x-ndjson`` or ``text/event-stream`` streams the events.

    With ``"context_requests": "allow"`` a turn that lacks context may pause instead: the answer is then
    ``{"status": "context_required", "request_id", "required": [...]}`` (a ``context_required`` event when
    streaming), and ``POST /api/sessions/{id}/context-requests/{request_id}/supply`` resumes it.

    With an ``Idempotency-Key`` the turn runs once: a retry with the same key and body gets the first answer
    (as JSON, with ``Idempotent-Replayed: true``), a different body 422, and a retry while it runs 409.
    Over the caller's limits: 429 ``rate_limited``, ``token_quota_exceeded`` or ``too_many_concurrent_turns``.
    """
    # Admitted and checked before the key is claimed: a refusal or a bad request is not remembered under it.
    turn = await orchestrator.start(body, principal)
    parts = {"route": "orc", "body": body.model_dump(mode="json")}
    return await turn_response(request, principal, keys, parts, turn)
