"""``POST /api/orc``: one turn, as JSON or as a stream of events."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from orc import scheduling
from orc.http.dependencies import Caller, Keys, Limits, Orc
from orc.http.idempotent import claim, idempotent, recorded_stream, replay
from orc.http.openapi_events import STREAM_RESPONSES
from orc.http.streaming import MEDIA_TYPES, encode, negotiate
from orc.idempotency import StoredResponse
from orc.principal import Principal
from orc.quotas import Quotas, TurnSlot
from orc.turns import ContextRequired, Event, TurnRequest, TurnResult

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
    body: TurnRequest,
    request: Request,
    orchestrator: Orc,
    principal: Caller,
    keys: Keys,
    quotas: Limits,
) -> Response | TurnResult | ContextRequired:
    """Answer one question. ``Accept: application/x-ndjson`` or ``text/event-stream`` streams the events.

    With ``"context_requests": "allow"`` a turn that lacks context may pause instead: the answer is then
    ``{"status": "context_required", "request_id", "required": [...]}`` (a ``context_required`` event when
    streaming), and ``POST /api/sessions/{id}/context-requests/{request_id}/supply`` resumes it.

    With an ``Idempotency-Key`` the turn runs once: a retry with the same key and body gets the first answer
    (as JSON, with ``Idempotent-Replayed: true``), a different body 422, and a retry while it runs 409.
    Over the caller's limits: 429 ``rate_limited``, ``token_quota_exceeded`` or ``too_many_concurrent_turns``.
    """
    # The in-process concurrency cap first: a caller over it is refused without touching the store.
    slot = quotas.turn_slot(principal)
    # The slot is the turn's gate at its yield points (orc.scheduling), for this task and the ones it starts.
    scheduling.enter(slot)
    try:
        await quotas.admit(principal)
        turn = await orchestrator.prepare(body, principal)
        parts = {"route": "orc", "body": body.model_dump(mode="json")}
        fmt = negotiate(request.headers.get("accept", ""))
        if fmt is None:

            async def run() -> TurnResult | ContextRequired:
                result = await orchestrator.complete(turn)
                if isinstance(result, TurnResult):
                    await quotas.charge(principal, result.metadata.usage.total_tokens)
                return result

            with slot:
                return await idempotent(request, principal, keys, parts, 200, run)
        claimed = await claim(request, principal, keys, parts)
    except BaseException:
        slot.release()
        raise
    if isinstance(claimed, StoredResponse):
        slot.release()
        return replay(claimed)
    events = orchestrator.stream_prepared(turn)
    if claimed is not None:
        events = recorded_stream(events, keys, claimed, stream_result)
    return StreamingResponse(
        encode(_metered(events, quotas, principal, slot), fmt),
        media_type=MEDIA_TYPES[fmt],
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        # Also after a stream that never started (the client left first): the slot is freed either way.
        background=BackgroundTask(slot.release),
    )


async def _metered(
    events: AsyncIterator[Event], quotas: Quotas, principal: Principal, slot: TurnSlot
) -> AsyncIterator[Event]:
    """Pass the events through, charge the turn's tokens at ``final`` and free the turn slot when the stream ends."""
    try:
        async for event in events:
            if event["type"] == "final":
                await quotas.charge(principal, int(event["usage"].get("total_tokens", 0)))
            yield event
    finally:
        slot.release()


def stream_result(event: Event) -> TurnResult | ContextRequired:
    """The JSON result a streamed turn ended with: its answer, or the context it paused for."""
    if event["type"] == "context_required":
        return ContextRequired.model_validate(event)
    return TurnResult.model_validate(event)
