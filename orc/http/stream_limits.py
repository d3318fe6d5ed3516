"""Bounds on long-lived responses: how many streams a principal and the process may hold open, and for how long.

Which requests are streams is the route table's to say (:mod:`orc.http.route_table`): routes that always stream
(the MCP server's notification stream, a session's digest statuses, a context request's events) and turns that
stream when ``Accept`` asks for NDJSON or server-sent events (``POST /api/orc``, a supply, a run-without). Each
holds a connection and a task for as long as the client keeps it, so without limits idle streams would stay open
for ever. :class:`StreamLimits` (an ASGI middleware in front of the app):

- refuses a stream beyond ``per_principal`` open streams of its principal, ``per_organization`` of its
  organization (a group of keys), or ``total`` of the process, with 429 ``too_many_streams`` and ``Retry-After``
  (counted in process: a stream lives on one instance);
- keeps the last ``reserved`` slots for principals that hold no stream yet, so principals that already stream
  cannot take every slot between them;
- ends a stream that sent nothing for ``idle_seconds`` and any stream after ``max_seconds``. Keep-alive pings
  (SSE comment lines, which the MCP SDK sends every 15 s) are not something sent: an idle stream that only pings
  is still idle.

A stream ended by a limit simply ends (its response already started); clients reconnect as they would after
any dropped connection.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orc.errors import OrcError, TooManyStreams
from orc.http import problems
from orc.http.auth import Authenticator
from orc.http.route_table import RouteTable
from orc.http.streaming import negotiate


@dataclass(frozen=True, slots=True)
class StreamBounds:
    """The limits :class:`StreamLimits` enforces."""

    per_principal: int
    total: int
    idle_seconds: float
    max_seconds: float

    @property
    def per_organization(self) -> int:
        """Open streams of one organization's principals together: a quarter of the process."""
        return max(self.per_principal, self.total // 4)

    @property
    def reserved(self) -> int:
        """Slots only a principal without an open stream may take."""
        return self.total // 8


def carries_data(body: bytes) -> bool:
    """Whether a chunk of a streamed body holds more than keep-alive: SSE comment lines (``: ping``) and blank
    lines are not data."""
    return any(line.strip() and not line.lstrip().startswith(b":") for line in body.split(b"\n"))


def is_stream(scope: Scope, table: RouteTable) -> bool:
    """Whether the request asks for one of the long-lived responses, as its route's class says."""
    mode = table.route_for(scope).guards.streams
    if mode == "on_accept":
        accept = next((value.decode("latin-1") for key, value in scope["headers"] if key == b"accept"), "")
        return negotiate(accept) is not None
    return mode == "always"


class StreamLimits:
    """Counts, caps and times out the app's streams (see the module docstring)."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator, bounds: StreamBounds, table: RouteTable) -> None:
        self.app = app
        self.authenticator = authenticator
        self.bounds = bounds
        self.table = table
        self.open: dict[str, int] = {}
        self.by_organization: dict[str, int] = {}
        self.total = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_stream(scope, self.table):
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        try:
            principal = self.authenticator.authenticate(headers)
        except OrcError:
            await self.app(scope, receive, send)  # the app answers 401 itself
            return
        owner, organization = principal.partition_key, principal.organization
        if not self._admits(owner, organization):
            refused = TooManyStreams("too many open streams; close one or retry later", retry_after=5)
            await problems.problem_for(refused)(scope, receive, send)
            return
        self.total += 1
        _add(self.open, owner, 1)
        _add(self.by_organization, organization, 1)
        try:
            await self._bounded(scope, receive, send)
        finally:
            self.total -= 1
            _add(self.open, owner, -1)
            _add(self.by_organization, organization, -1)

    def _admits(self, owner: str, organization: str) -> bool:
        holding = self.open.get(owner, 0)
        limit = self.bounds.total - (self.bounds.reserved if holding else 0)
        return (
            self.total < limit
            and holding < self.bounds.per_principal
            and self.by_organization.get(organization, 0) < self.bounds.per_organization
        )

    async def _bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        loop = asyncio.get_running_loop()
        end = loop.time() + self.bounds.max_seconds
        started = finished = False

        try:
            async with asyncio.timeout(min(end, loop.time() + self.bounds.idle_seconds)) as deadline:

                async def sending(message: Message) -> None:
                    nonlocal started, finished
                    started = started or message["type"] == "http.response.start"
                    finished = message["type"] == "http.response.body" and not message.get("more_body", False)
                    await send(message)
                    # What was sent resets the idle clock (never past the stream's total) — unless it was only a
                    # keep-alive ping, which the server sends by itself and which says nothing of the client.
                    if message["type"] != "http.response.body" or carries_data(message.get("body", b"")):
                        deadline.reschedule(min(end, loop.time() + self.bounds.idle_seconds))

                await self.app(scope, receive, sending)
        except TimeoutError:
            if not started:
                timed_out = problems.problem(504, "stream_timeout", "the stream sent nothing in time; reconnect")
                await timed_out(scope, receive, send)
            elif not finished:
                # End the response properly (the last chunk), so the connection stays usable.
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def _add(counts: dict[str, int], key: str, change: int) -> None:
    left = counts.get(key, 0) + change
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)
