"""``Idempotency-Key`` for mutating routes: a replay returns the first response, marked as replayed.

The same key with a different request is refused (422) and a key whose first request is still running is a
conflict (409); keys are scoped to the principal (:class:`orc.idempotency.IdempotencyKeys`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import Request
from pydantic import BaseModel
from starlette.responses import JSONResponse, Response

from orc.errors import OrcError, TooManyRequests
from orc.http import problems
from orc.idempotency import Claim, IdempotencyKeys, StoredResponse, fingerprint
from orc.principal import Principal
from orc.turns import Event

REPLAYED = "Idempotent-Replayed"
HEADER = "idempotency-key"
KEY_PARAMETER: dict[str, Any] = {
    "name": "Idempotency-Key",
    "in": "header",
    "required": False,
    "schema": {"type": "string"},
}
"""The header as an OpenAPI parameter (``openapi_extra={"parameters": [KEY_PARAMETER]}`` of an idempotent route)."""


def replay(stored: StoredResponse) -> Response:
    """The first response again, marked as a replay."""
    return JSONResponse(
        stored.body, status_code=stored.status, media_type=stored.media_type, headers={REPLAYED: "true"}
    )


async def claim(
    request: Request, principal: Principal, keys: IdempotencyKeys, parts: Any
) -> Claim | StoredResponse | None:
    """Claim the request's key: ``None`` without a key, the stored response on a replay, else the claim."""
    key = request.headers.get(HEADER)
    if key is None:
        return None
    return await keys.begin(principal, key, fingerprint(parts))


async def idempotent(
    request: Request,
    principal: Principal,
    keys: IdempotencyKeys,
    parts: Any,
    status_code: int,
    run: Callable[[], Awaitable[BaseModel]],
) -> Response:
    """Run ``run`` once per key; caller errors are remembered and replayed too, server failures are not."""
    claimed = await claim(request, principal, keys, parts)
    if isinstance(claimed, StoredResponse):
        return replay(claimed)
    return await answered(keys, claimed, status_code, run)


async def answered(
    keys: IdempotencyKeys, claimed: Claim | None, status_code: int, run: Callable[[], Awaitable[BaseModel]]
) -> Response:
    """Run ``run`` under a claimed key (``None``: no key) and record its response, or its refusal."""
    if claimed is None:
        # pydantic writes the JSON itself: no dict of the result, no second pass through the json module.
        result = await run()
        return Response(result.model_dump_json(), status_code=status_code, media_type="application/json")
    try:
        result = await run()
    except TooManyRequests:
        # A limit's refusal passes with time: the same key retried after Retry-After runs the request.
        await keys.abandon(claimed)
        raise
    except OrcError as exc:
        if exc.status >= 500:
            await keys.abandon(claimed)
            raise
        # A refused request is answered the same way on replay (same key, same request, same answer).
        response = problems.problem_for(exc)
        await keys.complete(claimed, exc.status, json.loads(bytes(response.body)), problems.PROBLEM_JSON)
        return response
    except BaseException:
        await keys.abandon(claimed)
        raise
    body = result.model_dump(mode="json")
    await keys.complete(claimed, status_code, body)
    return JSONResponse(body, status_code=status_code)


async def recorded_stream(
    events: AsyncIterator[Event], keys: IdempotencyKeys, claimed: Claim, result: Callable[[Event], BaseModel]
) -> AsyncIterator[Event]:
    """Pass a turn's events through and record its ``final`` result (or the ``context_required`` it paused with)
    under the key (a replay answers JSON)."""
    completed = False
    try:
        async for event in events:
            if event["type"] in ("final", "context_required"):
                await keys.complete(claimed, 200, result(event).model_dump(mode="json"))
                completed = True
            yield event
    finally:
        if not completed:
            await keys.abandon(claimed)
