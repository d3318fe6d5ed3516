"""A pure ASGI guard on request body size, counted as the body arrives (Content-Length can lie or be absent); the
limit is the one of the route's class in the route table (no body, a JSON body, files)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orc.http.route_table import BodyKind, RouteTable


class BodySizeLimit:
    """Answer 413 problem+json when a request body exceeds the limit of its route's class (``limits``: bytes per
    kind of body).

    Past the limit the app is handed an end-of-body and whatever it answers is replaced by the 413, so no
    handler ever acts on a truncated body.
    """

    def __init__(self, app: ASGIApp, table: RouteTable, limits: Mapping[BodyKind, int]) -> None:
        self.app = app
        self.table = table
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limits[self.table.route_for(scope).guards.body]
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _reject(send, limit)
            return
        received = 0
        too_large = False
        rejected = False

        async def counting_receive() -> Message:
            nonlocal received, too_large
            if too_large:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    too_large = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal rejected
            if not too_large:
                await send(message)
            elif not rejected:
                rejected = True
                await _reject(send, limit)

        await self.app(scope, counting_receive, guarded_send)


async def _reject(send: Send, limit: int) -> None:
    body = json.dumps(
        {
            "type": "about:blank",
            "title": "Content Too Large",
            "status": 413,
            "code": "payload_too_large",
            "detail": f"the request body is larger than {limit} bytes" if limit else "this route takes no request body",
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
