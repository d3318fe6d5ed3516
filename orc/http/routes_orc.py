"""``POST /api/orc``: one turn, as JSON or as a stream of events."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response, StreamingResponse

from orc.http.dependencies import Caller, Keys, Orc
from orc.http.idempotent import claim, idempotent, recorded_stream, replay
from orc.http.streaming import MEDIA_TYPES, encode, negotiate
from orc.idempotency import StoredResponse
from orc.turns import TurnRequest, TurnResult

router = APIRouter()


@router.post(
    "/orc",
    response_model=TurnResult,
    summary="Ask a question in a conversation",
    responses={200: {"content": {"application/x-ndjson": {}, "text/event-stream": {}}}},
)
async def ask(
    body: TurnRequest,
    request: Request,
    orchestrator: Orc,
    principal: Caller,
    keys: Keys,
) -> Response | TurnResult:
    """Answer one question. ``Accept: application/x-ndjson`` or ``text/event-stream`` streams the events.

    With an ``Idempotency-Key`` the turn runs once: a retry with the same key and body gets the first answer
    (as JSON, with ``Idempotent-Replayed: true``), a different body 422, and a retry while it runs 409.
    """
    turn = await orchestrator.prepare(body, principal)
    parts = {"route": "orc", "body": body.model_dump(mode="json")}
    fmt = negotiate(request.headers.get("accept", ""))
    if fmt is None:
        return await idempotent(request, principal, keys, parts, 200, lambda: orchestrator.complete(turn))
    claimed = await claim(request, principal, keys, parts)
    if isinstance(claimed, StoredResponse):
        return replay(claimed)
    events = orchestrator.stream_prepared(turn)
    if claimed is not None:
        events = recorded_stream(events, keys, claimed, TurnResult.model_validate)
    return StreamingResponse(
        encode(events, fmt),
        media_type=MEDIA_TYPES[fmt],
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
