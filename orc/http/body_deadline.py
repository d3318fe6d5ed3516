"""A deadline on reading a request body, and a bound on the bodies one caller may be sending at once.

Without them, one caller's authenticated POSTs that drip a byte every few seconds can hold every connection slot of
the process (uvicorn's ``limit_concurrency``), and every caller, ``/api/health`` included, gets 503.
:class:`BodyDeadline` (an ASGI middleware, outermost):

- gives a body ``base_seconds`` plus one second per ``min_bytes_per_second`` of its size (``Content-Length``, or
  what has arrived of a chunked body) to arrive; a body that is late ends the request with 408
  ``request_timeout`` and ``Connection: close``, and the app is told the client went away, so no handler acts on
  part of a body;
- lets one caller (its principal, or its address when it has none) send at most ``per_caller`` bodies at a time;
  the next is refused at once with 429 ``too_many_uploads``, before any of its body is read;
- answers ``Connection: close`` when the response starts before the body has arrived (a 401 before an upload is
  read, a refusal): the connection is not kept for a next request behind a body nobody reads. ``orc serve`` then
  drops the rest of the body while the client finishes sending it, for a bounded time, so the client reads the
  answer instead of a reset (:mod:`orc.http.connection_limits`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orc.errors import OrcError, TooManyRequests
from orc.http import problems
from orc.http.auth import Authenticator


@dataclass(frozen=True, slots=True)
class BodyBounds:
    """The limits :class:`BodyDeadline` enforces."""

    base_seconds: float = 10.0
    min_bytes_per_second: int = 32 * 1024
    per_caller: int = 16


def _closing(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` with ``Connection: close`` (replacing any other ``Connection``)."""
    return [*((key, value) for key, value in headers if key.lower() != b"connection"), (b"connection", b"close")]


def _has_body(scope: Scope) -> tuple[bool, int]:
    """Whether the request announces a body, and its declared length (0 when chunked)."""
    length = 0
    chunked = False
    for key, value in scope["headers"]:
        if key == b"content-length" and value.strip().isdigit():
            length = int(value)
        elif key == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    return (length > 0 or chunked), length


class BodyDeadline:
    """Times and bounds request bodies (see the module docstring)."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator, bounds: BodyBounds | None = None) -> None:
        self.app = app
        self.authenticator = authenticator
        self.bounds = bounds or BodyBounds()
        self.reading: dict[str, int] = {}

    def _caller(self, scope: Scope) -> str:
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        try:
            return self.authenticator.authenticate(headers).partition_key
        except OrcError:
            client = scope.get("client")
            return f"address:{client[0] if client else 'unknown'}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        has_body, declared = _has_body(scope)
        if not has_body:
            await self.app(scope, receive, send)
            return
        caller = self._caller(scope)
        if self.reading.get(caller, 0) >= self.bounds.per_caller:
            refused = TooManyRequests(
                "too many request bodies in progress; finish one first", code="too_many_uploads", retry_after=5
            )
            response = problems.problem_for(refused)
            # Closed at once: a refused body is never read, and a keep-alive connection would hold its slot.
            response.headers["Connection"] = "close"
            await response(scope, receive, send)
            return
        self.reading[caller] = self.reading.get(caller, 0) + 1
        counted = True

        def done_reading() -> None:
            nonlocal counted
            if counted:
                counted = False
                left = self.reading[caller] - 1
                if left:
                    self.reading[caller] = left
                else:
                    del self.reading[caller]

        loop = asyncio.get_running_loop()
        started = loop.time()
        received = 0
        complete = timed_out = responded = False

        async def timed_receive() -> Message:
            nonlocal received, complete, timed_out
            if timed_out:
                return {"type": "http.disconnect"}
            if complete:
                return await receive()
            allowed = self.bounds.base_seconds + max(declared, received) / self.bounds.min_bytes_per_second
            try:
                async with asyncio.timeout(max(0.0, started + allowed - loop.time())):
                    message = await receive()
            except TimeoutError:
                timed_out = True
                done_reading()
                return {"type": "http.disconnect"}
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if not message.get("more_body", False):
                    complete = True
                    done_reading()
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal responded
            if timed_out:
                return
            if message["type"] == "http.response.start" and not complete:
                message = {**message, "headers": _closing(message.get("headers", []))}
            responded = True
            await send(message)

        try:
            await self.app(scope, timed_receive, guarded_send)
        except Exception:
            # A handler told that its client went away may raise; the 408 below answers for it.
            if not timed_out:
                raise
        finally:
            done_reading()
        if timed_out and not responded:
            late = problems.problem(
                408,
                "request_timeout",
                f"the request body did not arrive in time ({self.bounds.base_seconds:g} s plus one per "
                f"{self.bounds.min_bytes_per_second // 1024} KiB)",
                headers={"Connection": "close"},
            )
            await late(scope, receive, send)
