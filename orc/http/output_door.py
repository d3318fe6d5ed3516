"""The one door every response leaves by: the output policy on what the server serializes.

Wrapped around the whole served app (the API, ``/api/mcp``, the page, the problems the guards answer), it cleans
every string of every JSON body, NDJSON line and server-sent event with :meth:`OutputPolicy.value` — whatever route
made it, whatever model it was serialized from, a route or stream added later included. Nothing is cleaned route by
route.

Two things are not its job, each with its reason:

- the ``text`` of ``token`` events: a delta cannot be judged alone (a link may be split across two). The turn
  cleans its streamed answer as a whole (:class:`orc.output_policy.OutputStream`) and stores exactly what it sent;
- bodies that are not JSON or events: exports are cleaned where they are rendered (a PDF cannot be cleaned as
  bytes), and a document's own bytes are served as the document, sandboxed (``orc.http.routes_documents``).

Most bodies hold nothing to clean: a scan of the raw bytes for what any rule starts from (``<``, ``](``, ``]:``,
``![`` — none of which JSON's own syntax writes) lets them pass untouched, so the door costs a warm turn one scan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orc.output_policy import OutputPolicy

# What a rule of the policy starts from, as it appears in serialized JSON (a producer may escape '<', '[', '(' or
# ':' as \u00XX; NUL is always escaped).
_MAY_HOLD = re.compile(rb"<|\]\(|\]:|!\[|\\u00(?:00|3[cCaA]|5[bBdD]|2[18])")
_JSON_TYPES = frozenset({"application/json", "application/problem+json"})
_NDJSON = "application/x-ndjson"
_SSE = "text/event-stream"


class OutputDoor:
    """ASGI middleware: the output policy ``policy()`` on every JSON body and every streamed event ``app`` sends."""

    def __init__(
        self, app: ASGIApp, policy: Callable[[], OutputPolicy], *, server_documents: Iterable[str] = ()
    ) -> None:
        """``server_documents``: paths whose responses hold only the server's own text (the OpenAPI document,
        whose descriptions name placeholders such as ``<document>::<span_id>``), sent as they are."""
        self.app = app
        self.policy = policy
        self.server_documents = frozenset(server_documents)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") == "HEAD" or scope.get("path") in self.server_documents:
            # A HEAD response has no body to clean (and its length is the GET body's).
            await self.app(scope, receive, send)
            return
        policy = self.policy()
        mode: str | None = None
        start: Message | None = None
        held: list[bytes] = []

        async def door(message: Message) -> None:
            nonlocal mode, start
            if message["type"] == "http.response.start":
                mode = _mode(message)
                if mode == "json":
                    start = message  # sent with the body, whose length may change
                    return
                await send(message)
                return
            if message["type"] != "http.response.body" or mode is None:
                await send(message)
                return
            body: bytes = message.get("body", b"")
            more = bool(message.get("more_body", False))
            if mode == "json":
                held.append(body)
                if more:
                    return
                cleaned = _json_body(b"".join(held), policy)
                assert start is not None
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                headers.append((b"content-length", str(len(cleaned)).encode()))
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": cleaned, "more_body": False})
                return
            # A stream: whole lines are cleaned and sent as they come; a partial line waits for its end.
            held.append(body)
            data = b"".join(held)
            cut = len(data) if not more else data.rfind(b"\n") + 1
            held[:] = [data[cut:]] if cut < len(data) else []
            ready = data[:cut]
            if ready or not more:
                await send({**message, "body": _stream_lines(ready, mode, policy)})

        await self.app(scope, receive, door)


def _mode(start: Message) -> str | None:
    for key, value in start.get("headers", []):
        if key.lower() == b"content-type":
            media = value.decode("latin-1").split(";")[0].strip().lower()
            if media in _JSON_TYPES:
                return "json"
            if media == _NDJSON:
                return "ndjson"
            if media == _SSE:
                return "sse"
            return None
    return None


def _json_body(body: bytes, policy: OutputPolicy) -> bytes:
    if not _MAY_HOLD.search(body):
        return body
    try:
        document = json.loads(body)
    except ValueError:
        # Not what its type says: sent as cleaned text rather than as it is.
        return policy.text(body.decode("utf-8", "replace")).encode()
    return _dumps(policy.value(document))


def _stream_lines(data: bytes, mode: str, policy: OutputPolicy) -> bytes:
    if not _MAY_HOLD.search(data):
        return data
    lines = data.split(b"\n")
    for index, line in enumerate(lines):
        if not _MAY_HOLD.search(line):
            continue
        if mode == "ndjson":
            lines[index] = _event(line, policy)
        elif line.startswith(b"data:"):
            payload = line[5:]
            lead = b" " if payload.startswith(b" ") else b""
            lines[index] = b"data:" + lead + _event(payload[len(lead) :], policy)
        elif not line.startswith(b":"):
            # Another field of an event (its name, id): no rule's syntax belongs there.
            lines[index] = policy.text(line.decode("utf-8", "replace")).encode()
    return b"\n".join(lines)


def _event(line: bytes, policy: OutputPolicy) -> bytes:
    try:
        event = json.loads(line)
    except ValueError:
        return policy.text(line.decode("utf-8", "replace")).encode()
    if isinstance(event, dict) and event.get("type") == "token":
        # Cleaned by the turn as part of the whole answer (see the module's docstring).
        return line
    return _dumps(policy.value(event))


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
