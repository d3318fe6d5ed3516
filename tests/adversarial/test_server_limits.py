"""The server's own limits: request heads bounded in size and time under both HTTP parsers, request bodies
bounded in time and per caller, idle streams ended even though the server pings them, and stream slots that no
group of principals can take between them."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from orc.http.app import stream_bounds
from orc.http.auth import authenticator_for
from orc.http.body_deadline import BodyBounds, BodyDeadline
from orc.http.connection_limits import (
    MAX_HEADER_BYTES,
    H11HeadLimitsProtocol,
    HttpToolsHeadLimitsProtocol,
    server_options,
)
from orc.http.route_table import RouteTable
from orc.http.stream_limits import StreamLimits
from orc.settings import Settings
from tests.adversarial.uvicorn_server import serving

DEADLINE_SECONDS = 10.0
PROTOCOLS = {"httptools": HttpToolsHeadLimitsProtocol, "h11": H11HeadLimitsProtocol}


async def ok_app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture(params=sorted(PROTOCOLS))
def server(request: pytest.FixtureRequest) -> Iterator[int]:
    """uvicorn on loopback with orc serve's options and one of the two parsers (a short head deadline)."""
    protocol = PROTOCOLS[request.param]
    assert protocol is not None

    class Quick(protocol):  # type: ignore[misc, valid-type]
        header_timeout = 0.3

    with serving(ok_app, Quick) as port:
        yield port


def _answer(sock: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("size", [MAX_HEADER_BYTES + 1024, 8 * 1024 * 1024])
def test_a_request_head_over_64_kib_is_refused_with_431_under_either_parser(server: int, size: int) -> None:
    with socket.create_connection(("127.0.0.1", server), timeout=DEADLINE_SECONDS) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ")
        try:
            for start in range(0, size, 65536):
                client.sendall(b"a" * min(65536, size - start))
            client.sendall(b"\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server already answered and closed
        answer = _answer(client)

    assert b" 200 " not in answer.split(b"\r\n", 1)[0]
    assert answer == b"" or answer.startswith(b"HTTP/1.1 431") or answer.startswith(b"HTTP/1.1 400")


def test_a_head_within_the_limit_is_answered_under_either_parser(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server), timeout=DEADLINE_SECONDS) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 32_000 + b"\r\nConnection: close\r\n\r\n")
        answer = _answer(client)

    assert answer.startswith(b"HTTP/1.1 200")


def test_a_head_that_never_ends_is_cut_off_under_either_parser(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server), timeout=DEADLINE_SECONDS) as slow:
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n")
        started = time.monotonic()
        closed = _answer(slow)

    assert closed == b""
    assert time.monotonic() - started < DEADLINE_SECONDS


NODE_FETCH_IDLE_SECONDS = 4.0
"""How long Node's fetch (undici: the MCP Inspector, the TypeScript MCP SDK) reuses an idle connection."""
AIOHTTP_IDLE_SECONDS = 15.0


def test_an_idle_connection_stays_open_longer_than_clients_reuse_it() -> None:
    # A client sends its next request on a connection it still holds as idle; when the server closes at about that
    # moment, the request is lost with "other side closed". A loop busy for a few seconds must not close the gap.
    clients_reuse = max(httpx.Limits().keepalive_expiry or 0.0, NODE_FETCH_IDLE_SECONDS, AIOHTTP_IDLE_SECONDS)

    assert server_options()["timeout_keep_alive"] >= clients_reuse + 5


KEYS = {
    "key-drip": {"organization": "acme", "user": "drip"},
    "key-calm": {"organization": "other", "user": "calm"},
}


def _authenticator():  # type: ignore[no-untyped-def]
    return authenticator_for(Settings(auth="api-key", api_keys=json.dumps(KEYS)))  # type: ignore[arg-type]


class BodyReader:
    """An app that reads the whole body, then answers how many bytes it read."""

    def __init__(self) -> None:
        self.read_whole: list[int] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise OSError("client went away")
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.read_whole.append(len(body))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def _post(key: str, length: int) -> Scope:
    headers = [(b"x-api-key", key.encode()), (b"content-length", str(length).encode())]
    return {"type": "http", "method": "POST", "path": "/api/orc", "headers": headers, "client": ("127.0.0.1", 1)}


async def _call(
    app: BodyDeadline, scope: Scope, pieces: list[bytes], *, then_wait: bool, waiting: asyncio.Event | None = None
) -> list[Message]:
    sent: list[Message] = []
    queue = list(pieces)
    forever = asyncio.Event()

    async def receive() -> Message:
        if queue:
            return {"type": "http.request", "body": queue.pop(0), "more_body": bool(queue) or then_wait}
        if waiting is not None:
            waiting.set()
        await forever.wait()  # a client that sends nothing more
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


async def test_a_body_that_does_not_arrive_in_time_gets_408_and_the_app_never_sees_part_of_it() -> None:
    reader = BodyReader()
    app = BodyDeadline(reader, _authenticator(), BodyBounds(base_seconds=0.05, min_bytes_per_second=1 << 20))

    async with asyncio.timeout(DEADLINE_SECONDS):
        late = await _call(app, _post("key-drip", 100), [b"x"], then_wait=True)
    on_time = await _call(app, _post("key-drip", 2), [b"o", b"k"], then_wait=False)

    assert late[0]["status"] == 408
    assert json.loads(late[1]["body"])["code"] == "request_timeout"
    assert (b"connection", b"close") in late[0]["headers"]
    assert on_time[0]["status"] == 200 and reader.read_whole == [2]
    assert app.reading == {}


async def test_one_caller_sending_many_slow_bodies_is_refused_while_another_sends_its_own() -> None:
    reader = BodyReader()
    app = BodyDeadline(reader, _authenticator(), BodyBounds(base_seconds=60, per_caller=2))
    stalled = [asyncio.Event(), asyncio.Event()]
    dripping = [
        asyncio.create_task(_call(app, _post("key-drip", 100), [b"x"], then_wait=True, waiting=event))
        for event in stalled
    ]
    await asyncio.gather(*(event.wait() for event in stalled))

    refused = await _call(app, _post("key-drip", 2), [b"ok"], then_wait=False)
    other = await _call(app, _post("key-calm", 2), [b"ok"], then_wait=False)
    for task in dripping:
        task.cancel()

    assert refused[0]["status"] == 429 and json.loads(refused[1]["body"])["code"] == "too_many_uploads"
    assert other[0]["status"] == 200


class PingingStream:
    """An MCP-like stream that sends only keep-alive pings (SSE comments), as the SDK does, until released."""

    def __init__(self, every: float) -> None:
        self.every = every
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        self.started.set()
        while not self.release.is_set():
            await send({"type": "http.response.body", "body": b": ping - now\r\n\r\n", "more_body": True})
            await asyncio.sleep(self.every)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _stream_scope(key: str) -> Scope:
    return {"type": "http", "method": "GET", "path": "/api/mcp", "headers": [(b"x-api-key", key.encode())]}


async def _stream(app: StreamLimits, key: str) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(_stream_scope(key), receive, send)
    return sent


async def test_a_stream_that_only_pings_is_ended_by_the_idle_timeout() -> None:
    pinging = PingingStream(every=0.01)
    bounds = stream_bounds(Settings(stream_idle_seconds=0.1))
    limits = StreamLimits(pinging, _authenticator(), bounds, RouteTable())

    async with asyncio.timeout(DEADLINE_SECONDS):
        sent = await _stream(limits, "key-drip")

    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert limits.total == 0


async def test_principals_that_already_stream_cannot_take_every_slot() -> None:
    keys = {f"key-{org}-{user}": {"organization": org, "user": user} for org in "abcd" for user in ("u1", "u2")}
    keys["key-new"] = {"organization": "newcomer", "user": "n"}
    authenticator = authenticator_for(Settings(auth="api-key", api_keys=json.dumps(keys)))  # type: ignore[arg-type]
    held = PingingStream(every=0.05)
    limits = StreamLimits(
        held, authenticator, stream_bounds(Settings(max_streams_per_principal=4, max_streams=16)), RouteTable()
    )
    streams: list[asyncio.Task[list[Message]]] = []

    async def opened(key: str) -> bool:
        held.started.clear()
        task = asyncio.create_task(_stream(limits, key))
        started = asyncio.create_task(held.started.wait())
        await asyncio.wait({task, started}, return_when=asyncio.FIRST_COMPLETED)  # started, or refused
        started.cancel()
        if task.done():
            assert task.result()[0]["status"] == 429
            return False
        streams.append(task)
        return True

    for key in sorted(keys):
        if key != "key-new":
            while await opened(key):
                pass
    flooded = limits.total
    newcomer_admitted = await opened("key-new")
    held.release.set()
    await asyncio.gather(*streams)

    assert flooded < limits.bounds.total
    assert newcomer_admitted
