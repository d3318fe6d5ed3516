"""``POST /api/orc``: one turn, as JSON or as a stream of events."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response, StreamingResponse

from orc.http import dependencies
from orc.http.streaming import MEDIA_TYPES, encode, negotiate
from orc.orchestrator import Orchestrator
from orc.principal import Principal
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
    orchestrator: Annotated[Orchestrator, Depends(dependencies.orchestrator)],
    principal: Annotated[Principal, Depends(dependencies.principal)],
) -> Response | TurnResult:
    """Answer one question. ``Accept: application/x-ndjson`` or ``text/event-stream`` streams the events."""
    turn = await orchestrator.prepare(body, principal)
    fmt = negotiate(request.headers.get("accept", ""))
    if fmt is None:
        return await orchestrator.complete(turn)
    return StreamingResponse(
        encode(orchestrator.stream_prepared(turn), fmt),
        media_type=MEDIA_TYPES[fmt],
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
