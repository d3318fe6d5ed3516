"""``X-Content-Type-Options: nosniff`` on every response the server makes, problems and limits' refusals included.

Without it a browser may sniff a JSON answer that quotes a document (``<html><script>…``) as HTML and run it when
the response is opened directly; the page's own responses had it, the API's did not.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

NOSNIFF = (b"x-content-type-options", b"nosniff")


class NoSniffing:
    """``app``, with ``X-Content-Type-Options: nosniff`` added to every HTTP response that lacks it. A class with
    ``app`` like the other middlewares, so what wraps the FastAPI app can be walked down to it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not any(key.lower() == NOSNIFF[0] for key, _ in headers):
                    message = {**message, "headers": [*headers, NOSNIFF]}
            await send(message)

        await self.app(scope, receive, send_with_header)
