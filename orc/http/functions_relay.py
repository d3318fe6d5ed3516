"""Azure Functions with HTTP streams: one catch-all function that relays every request to the ASGI app.

``func.AsgiFunctionApp`` collects the whole response body before the host sends any of it, so an NDJSON or SSE
turn arrived in one piece when it ended. The HTTP-streams extension (``azurefunctions-extensions-http-fastapi``)
instead hands a function the worker's own Starlette request and sends back whatever response it returns, chunk
by chunk. :class:`AsgiRelay` drives the app's ``receive``/``send`` itself and feeds each ``http.response.body``
message into a :class:`~starlette.responses.StreamingResponse` through a queue. ``httpx.ASGITransport`` would be
shorter and is wrong here: it buffers the whole response.

With the extension imported every HTTP function of the app takes its request and response types, so there is
one function for every route (``{*path}``), never a second copy of the routes.

The app's lifespan runs once per worker process, started by the first request. The Python worker has no
supported shutdown hook (azure-functions-python-worker issue 1904), so on the host :meth:`AsgiRelay.shutdown`
is only called by embedders and tests; a stopped worker's process simply ends.
"""

# No ``from __future__ import annotations``: the worker reads the relay function's annotations at run time to
# choose the extension's request and response types.
import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import azure.functions as func
from azurefunctions.extensions.http.fastapi import Request, StreamingResponse
from starlette.requests import Request as StarletteRequest
from starlette.responses import Response as StarletteResponse
from starlette.responses import StreamingResponse as StarletteStreamingResponse
from starlette.types import ASGIApp, Message, Scope

from orc.errors import LifespanFailed
from orc.http import problems

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
"""Every method any route of the app answers (405s included) is relayed."""


class Lifespan:
    """Runs an ASGI app's lifespan protocol in a background task: :meth:`start` once, :meth:`stop` once."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.state: dict[str, Any] = {}
        self._inbox: asyncio.Queue[Message] = asyncio.Queue()
        self._outbox: asyncio.Queue[Message] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Send ``lifespan.startup`` and wait for the app's answer."""
        scope: Scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": self.state}
        self._task = asyncio.create_task(self._run(scope))
        await self._inbox.put({"type": "lifespan.startup"})
        answer = await self._answer()
        if answer["type"] != "lifespan.startup.complete":
            raise LifespanFailed(answer.get("message", "the app's lifespan startup failed"))

    async def _run(self, scope: Scope) -> None:
        await self.app(scope, self._inbox.get, self._outbox.put)

    async def stop(self) -> None:
        """Send ``lifespan.shutdown`` and wait until the app has released what it holds."""
        if self._task is None or self._task.done():
            return
        await self._inbox.put({"type": "lifespan.shutdown"})
        await self._answer()
        await self._task

    async def _answer(self) -> Message:
        assert self._task is not None
        getting = asyncio.ensure_future(self._outbox.get())
        await asyncio.wait({getting, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if getting.done():
            return getting.result()
        getting.cancel()
        # The app returned or raised without answering: a failed startup (or shutdown).
        error = self._task.exception()
        return {"type": "lifespan.startup.failed", "message": repr(error) if error else "the lifespan ended"}


class AsgiRelay:
    """Relays one Functions request to ``app`` and streams the app's response back as it is produced.

    Method, path (whole: host.json sets no route prefix), query string, headers, client and the request body
    (streamed in, so the app's own body-size limit applies as the bytes arrive) go to the app unchanged; status
    and every response header (repeated ones included) come back unchanged.
    """

    def __init__(self, app: ASGIApp, on_start: Callable[[], None] | None = None) -> None:
        self.app = app
        self._on_start = on_start
        self._lifespan: Lifespan | None = None
        self._starting = asyncio.Lock()

    async def start(self) -> None:
        """Start the app's lifespan unless it is running; concurrent first requests start it once.

        ``on_start`` is called first, on the worker's loop (function_app.py starts its diagnosis there).
        """
        async with self._starting:
            if self._lifespan is None:
                if self._on_start is not None:
                    self._on_start()
                lifespan = Lifespan(self.app)
                await lifespan.start()
                self._lifespan = lifespan

    async def shutdown(self) -> None:
        """Run the app's lifespan shutdown (on the loop that started it); the next request starts it again."""
        async with self._starting:
            lifespan, self._lifespan = self._lifespan, None
            if lifespan is not None:
                await lifespan.stop()

    async def __call__(self, request: StarletteRequest) -> StarletteResponse:
        """The app's response to ``request``, whose body is sent on as the app produces it."""
        await self.start()
        assert self._lifespan is not None
        exchange = _Exchange(self.app, _scope(request, self._lifespan.state), request.stream())
        start = await exchange.response_start()
        if start is None:
            return problems.problem(500, "internal_error", "the request failed on the server; it was not stored")
        response = StarletteStreamingResponse(exchange.body(), status_code=start["status"])
        response.raw_headers = [(name.lower(), value) for name, value in start.get("headers", [])]
        return response


class _Exchange:
    """One request/response exchange with the app, running in its own task."""

    def __init__(self, app: ASGIApp, scope: Scope, body: AsyncIterator[bytes]) -> None:
        self._request_body = body
        self._request_done = False
        self._finished = asyncio.Event()
        self._messages: asyncio.Queue[Message | None] = asyncio.Queue()
        self._task = asyncio.create_task(self._run(app, scope))

    async def _run(self, app: ASGIApp, scope: Scope) -> None:
        try:
            await app(scope, self._receive, self._messages.put)
        finally:
            # None marks the end, whether the app finished, failed or was cancelled.
            await self._messages.put(None)

    async def _receive(self) -> Message:
        if not self._request_done:
            chunk = await anext(self._request_body, None)
            if chunk:
                return {"type": "http.request", "body": chunk, "more_body": True}
            self._request_done = True
            return {"type": "http.request", "body": b"", "more_body": False}
        # Nothing more to read: the client is "connected" until the response has been sent or abandoned.
        await self._finished.wait()
        return {"type": "http.disconnect"}

    async def response_start(self) -> Message | None:
        """The app's ``http.response.start``, or None when the app ended without starting a response."""
        message = await self._messages.get()
        if message is not None and message["type"] == "http.response.start":
            return message
        await self._close()
        return None

    async def body(self) -> AsyncIterator[bytes]:
        """The response body, one chunk per ``http.response.body`` message, until the last one."""
        try:
            while (message := await self._messages.get()) is not None:
                if message["type"] != "http.response.body":
                    continue
                chunk = message.get("body", b"")
                if chunk:
                    yield chunk
                if not message.get("more_body", False):
                    break
        finally:
            await self._close()

    async def _close(self) -> None:
        """Tell the app the exchange is over and wait for it; a client that left cancels a running app."""
        self._finished.set()
        if not self._task.done():
            self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


def _scope(request: StarletteRequest, state: dict[str, Any]) -> Scope:
    """The app's HTTP scope for the worker's ``request``: the same request, as ``orc serve`` would see it."""
    original = request.scope
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": original.get("http_version", "1.1"),
        "method": request.method,
        "scheme": original.get("scheme", "http"),
        "server": original.get("server"),
        "client": original.get("client"),
        "root_path": "",
        "path": request.url.path,
        "raw_path": original.get("raw_path") or request.url.path.encode(),
        "query_string": original.get("query_string", b""),
        "headers": list(original.get("headers", [])),
        # A fresh copy per request, as servers do with the lifespan state.
        "state": dict(state),
    }


class RelayFunctionApp(func.FunctionApp):
    """A Function App with one HTTP function, ``{*path}`` for every method, relaying to an ASGI app.

    ``relay`` is the :class:`AsgiRelay`; its :meth:`~AsgiRelay.shutdown` ends the app's lifespan.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        auth_level: func.AuthLevel = func.AuthLevel.ANONYMOUS,
        on_start: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(http_auth_level=auth_level)
        relay = self.relay = AsgiRelay(app, on_start)

        @self.route(route="{*path}", methods=list(METHODS), auth_level=auth_level)
        async def relay_to_asgi(req: Request) -> StreamingResponse:
            """Every route of the app: the request goes to the ASGI app, its response streams back."""
            return await relay(req)
