"""AsgiRelay against a small ASGI app that echoes what it was given: the request arrives whole and unchanged,
the response leaves with its status and every header, and the lifespan runs once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from orc.errors import LifespanFailed
from orc.http.functions_relay import AsgiRelay
from tests.functions_requests import read, worker_request


class EchoApp:
    """Answers 207 with a JSON echo of the request, two Set-Cookie headers, and one body chunk per request chunk."""

    def __init__(self) -> None:
        self.startups = 0
        self.shutdowns = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self.startups += 1
                    scope["state"]["started"] = True
                    await send({"type": "lifespan.startup.complete"})
                else:
                    self.shutdowns += 1
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        echo = {
            "method": scope["method"],
            "path": scope["path"],
            "query": scope["query_string"].decode(),
            "client": list(scope["client"]),
            "headers": [[k.decode(), v.decode()] for k, v in scope["headers"]],
            "state": scope["state"],
            "chunks": len([c for c in chunks if c]),
            "size": sum(map(len, chunks)),
        }
        headers = [(b"content-type", b"application/json"), (b"set-cookie", b"a=1"), (b"set-cookie", b"b=2")]
        await send({"type": "http.response.start", "status": 207, "headers": headers})
        await send({"type": "http.response.body", "body": json.dumps(echo).encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def test_the_request_reaches_the_app_unchanged_and_its_body_streams_in() -> None:
    app = EchoApp()
    relay = AsgiRelay(app)
    request = worker_request(
        "PUT",
        "http://localhost/api/things/1?a=1&b=two",
        body=b"z" * 200_000,
        headers={"X-API-Key": "k", "Content-Type": "application/octet-stream"},
        chunk_size=65_536,
    )

    answer = await read(await relay(request))
    await relay.shutdown()

    echo = answer.json()
    assert (echo["method"], echo["path"], echo["query"]) == ("PUT", "/api/things/1", "a=1&b=two")
    assert echo["client"] == ["203.0.113.7", 50123]
    assert ["x-api-key", "k"] in echo["headers"]
    assert (echo["chunks"], echo["size"]) == (4, 200_000)
    assert echo["state"] == {"started": True}


async def test_status_and_repeated_headers_come_back_unchanged() -> None:
    relay = AsgiRelay(EchoApp())

    answer = await read(await relay(worker_request("GET", "http://localhost/api/x")))
    await relay.shutdown()

    assert answer.status == 207
    assert answer.headers.get_list("set-cookie") == ["a=1", "b=2"]


async def test_the_lifespan_starts_once_for_many_requests_and_stops_on_shutdown() -> None:
    app = EchoApp()
    relay = AsgiRelay(app)

    for _ in range(3):
        await read(await relay(worker_request("GET", "http://localhost/api/x")))
    await relay.shutdown()

    assert (app.startups, app.shutdowns) == (1, 1)


async def test_an_app_that_ends_without_answering_is_a_500_problem() -> None:
    async def silent(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await receive()
            await send({"type": "lifespan.startup.complete"})
            await receive()
            await send({"type": "lifespan.shutdown.complete"})

    relay = AsgiRelay(silent)
    answer = await read(await relay(worker_request("GET", "http://localhost/api/x")))
    await relay.shutdown()

    assert answer.status == 500
    assert answer.headers["content-type"] == "application/problem+json"


async def test_a_failed_startup_fails_the_request_with_the_apps_reason() -> None:
    async def broken(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        await send({"type": "lifespan.startup.failed", "message": "missing ORC_COSMOS_ENDPOINT"})

    with pytest.raises(LifespanFailed, match="ORC_COSMOS_ENDPOINT"):
        await AsgiRelay(broken)(worker_request("GET", "http://localhost/api/x"))
