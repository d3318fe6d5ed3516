"""The output door cleans whatever an app serializes — JSON bodies, NDJSON lines and server-sent events, however they
are chunked — and leaves alone what is not its job: token deltas (the turn cleans the whole answer), other media,
HEAD responses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from orc.http.output_door import OutputDoor
from orc.output_policy import OutputPolicy
from orc.settings import Settings
from tests.adversarial.hostile import survivors
from tests.http.conftest import open_client

RAW = "<script>alert(1)</script> [pay](javascript:alert(3)) ![x](https://evil.example/?q=1)"


async def _json(request: Request) -> Response:
    return JSONResponse({"title": RAW, "items": [{"label": RAW}, 3, None], "plain": "900 euros [a.txt::S1]"})


async def _problem(request: Request) -> Response:
    return JSONResponse(
        {"code": "x", "detail": f"no file {RAW!r}"}, status_code=404, media_type="application/problem+json"
    )


async def _ndjson(request: Request) -> Response:
    async def lines() -> AsyncIterator[bytes]:
        event = json.dumps({"type": "final", "answer": RAW}).encode() + b"\n"
        yield event[:20]  # an event cut across two chunks
        yield event[20:] + json.dumps({"type": "token", "text": "[pay](java"}).encode() + b"\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")


async def _sse(request: Request) -> Response:
    async def events() -> AsyncIterator[bytes]:
        yield b"retry: 3000\n\n: keep-alive\n\n"
        yield b"event: manifest\ndata: " + json.dumps({"files": [{"filename": RAW}]}).encode() + b"\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


async def _text(request: Request) -> Response:
    return PlainTextResponse(RAW)


APP = OutputDoor(
    Starlette(
        routes=[
            Route("/json", _json, methods=["GET", "HEAD"]),
            Route("/problem", _problem),
            Route("/ndjson", _ndjson),
            Route("/sse", _sse),
            Route("/text", _text),
        ]
    ),
    OutputPolicy,
)


async def _get(path: str, method: str = "GET") -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=APP), base_url="http://door") as client:
        return await client.request(method, path)


async def test_every_string_of_a_json_body_is_cleaned_and_its_length_follows() -> None:
    response = await _get("/json")
    body = response.json()

    assert int(response.headers["content-length"]) == len(response.content)
    assert survivors(body["title"]) == [] and survivors(body["items"][0]["label"]) == []
    assert body["items"][1:] == [3, None] and body["plain"] == "900 euros [a.txt::S1]"
    assert "&lt;script&gt;" in body["title"] and "evil.example" not in body["title"]


async def test_a_problem_is_cleaned_like_any_json() -> None:
    response = await _get("/problem")

    assert response.status_code == 404 and survivors(response.json()["detail"]) == []


async def test_stream_events_are_cleaned_however_they_are_chunked_and_token_deltas_are_left_to_the_turn() -> None:
    lines = [json.loads(line) for line in (await _get("/ndjson")).text.splitlines()]

    assert survivors(lines[0]["answer"]) == [] and "&lt;script&gt;" in lines[0]["answer"]
    assert lines[1] == {"type": "token", "text": "[pay](java"}  # a piece of a whole the turn cleans


async def test_server_sent_events_are_cleaned_and_their_fields_and_comments_kept() -> None:
    text = (await _get("/sse")).text

    assert text.startswith("retry: 3000\n\n: keep-alive\n\nevent: manifest\ndata: ")
    data = json.loads(text.split("data: ", 1)[1])
    assert survivors(data["files"][0]["filename"]) == []


async def test_other_media_and_head_responses_pass_as_they_are() -> None:
    assert (await _get("/text")).text == RAW
    head = await _get("/json", "HEAD")
    get = await _get("/json")
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) >= len(get.content)  # the raw body's length, untouched


async def test_the_openapi_document_is_served_as_the_server_wrote_it() -> None:
    # Its descriptions name placeholders (<document>::<span_id>) that are the server's own text, not markup.
    async with open_client(Settings()) as client:
        document = (await client.get("/api/openapi.json")).json()

    assert "<document>::<span_id>" in json.dumps(document)
