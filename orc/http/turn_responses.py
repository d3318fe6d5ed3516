"""A turn's response, once for every route that runs one (``/api/orc``, ``…/supply``, ``…/run-without``): JSON or
a stream of events as the ``Accept`` header asks, under the request's ``Idempotency-Key``.

The turn service admits and runs the turn; this module only chooses the response's shape and records it under the
key (a replay answers the first response as JSON).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import Request
from pydantic import BaseModel
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

from orc.handoff import ContextUpdate
from orc.http.idempotent import answered, claim, recorded_stream, replay
from orc.http.streaming import MEDIA_TYPES, StreamFormat, encode, negotiate
from orc.idempotency import IdempotencyKeys, StoredResponse
from orc.principal import Principal
from orc.turns import ContextRequired, ContextUpdateEvent, Event, TurnResult
from orc.turns.service import Turn

Start = Turn | Callable[[], Awaitable[Turn | ContextUpdate]]
"""An admitted turn, or how to admit one (a resumption: only after the key is claimed, so it moves on once)."""


async def turn_response(
    request: Request, principal: Principal, keys: IdempotencyKeys, parts: Any, start: Start
) -> Response:
    """The turn's answer (or the paused request's state) as JSON, or its events as NDJSON / server-sent events."""
    fmt = negotiate(request.headers.get("accept", ""))
    try:
        claimed = await claim(request, principal, keys, parts)
    except BaseException:
        if isinstance(start, Turn):
            start.release()
        raise
    if isinstance(claimed, StoredResponse):
        if isinstance(start, Turn):
            start.release()
        return replay(claimed)
    if fmt is None:
        return await answered(keys, claimed, 200, lambda: _result(start))
    try:
        begun = start if isinstance(start, Turn) else await start()
    except BaseException:
        if claimed is not None:
            await keys.abandon(claimed)
        raise
    if isinstance(begun, ContextUpdate):
        if claimed is not None:
            await keys.complete(claimed, 200, begun.model_dump(mode="json"))
        return streaming(_one(update_event(begun)), fmt)
    events = begun.events()
    if claimed is not None:
        events = recorded_stream(events, keys, claimed, stream_result)
    # Released after a stream that never started too (the client left first).
    return streaming(events, fmt, BackgroundTask(begun.release))


async def _result(start: Start) -> BaseModel:
    begun = start if isinstance(start, Turn) else await start()
    return begun if isinstance(begun, ContextUpdate) else await begun.result()


def streaming(events: AsyncIterator[Event], fmt: StreamFormat, background: BackgroundTask | None = None) -> Response:
    """The events as a streaming response that no proxy buffers."""
    return StreamingResponse(
        encode(detached(events), fmt),
        media_type=MEDIA_TYPES[fmt],
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        background=background,
    )


async def detached(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """``events``, read by a task of their own.

    When the client leaves, Starlette cancels the response through an anyio cancel scope, and that cancellation
    is level-triggered: every await of the turn's unwinding is cancelled again, so the model's HTTP stream could
    not even close (the provider kept streaming until its idle timeout). The reading task is cancelled once,
    asyncio's way, and unwinds whole: the model request closes, the admission is released."""
    queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=1)

    async def pump() -> None:
        async for event in events:
            await queue.put(event)

    task = asyncio.create_task(pump())
    task.add_done_callback(_retrieve)
    getter: asyncio.Future[Event] | None = None
    try:
        while True:
            getter = asyncio.ensure_future(queue.get())
            await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter.done():
                yield getter.result()
                continue
            getter.cancel()
            while not queue.empty():
                yield queue.get_nowait()
            task.result()  # the run's own failure, if it raised one
            return
    finally:
        task.cancel()
        if getter is not None:
            getter.cancel()


def _retrieve(task: asyncio.Task[None]) -> None:
    # A reader that left never reads the outcome; a cancelled run's is not an error to report.
    if not task.cancelled():
        task.exception()


def update_event(update: ContextUpdate) -> ContextUpdateEvent:
    """The ``context_update`` event of a supply that left slots missing."""
    return ContextUpdateEvent(
        type="context_update",
        request_id=update.request_id,
        status="pending",
        supplied=update.supplied,
        missing=update.missing,
    )


async def _one(event: Event) -> AsyncIterator[Event]:
    yield event


def stream_result(event: Event) -> TurnResult | ContextRequired:
    """The JSON result a streamed turn ended with: its answer, or the context it paused for."""
    if event["type"] == "context_required":
        return ContextRequired.model_validate(event)
    return TurnResult.model_validate(event)
