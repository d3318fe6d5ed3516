"""Streaming through the Functions entry against ``orc serve`` (``python -m bench.functions_stream``).

Target (issue 16): through the Functions entry, the first NDJSON event of a turn arrives ≤ 20 ms after the same
event under ``orc serve``.

One process, one event loop, the same turns on three paths, interleaved so that drift hits them alike:

- ``orc serve``: the ASGI app under uvicorn on a 127.0.0.1 port, read with httpx;
- ``function (in process)``: the Function App's one HTTP function called with a Starlette request, as the
  worker calls it, its ``StreamingResponse`` body iterated;
- ``function (worker's uvicorn)``: the same function behind a catch-all Starlette route under uvicorn on a
  127.0.0.1 port, which is the shape of the worker's own HTTP proxy (the Functions host is not in the path).

Each turn asks about one uploaded sample document, with a model that takes ``--latency`` seconds, so the final
event comes that much after the first: a buffered path would show first ≈ final.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Message

from bench.common import (
    bench_settings,
    loopback_client,
    scripted_model,
    serve_on_loopback,
    summarize,
    temporary_home,
    turn_body,
    upload_http,
)
from orc import event_loop
from orc.http import create_app
from orc.http.functions_relay import METHODS, RelayFunctionApp
from orc.testing import forbid_model_requests

TARGET_MS = 20.0
DOCUMENT = "lease.txt"
NDJSON = {"content-type": "application/json", "accept": "application/x-ndjson"}
Timing = tuple[float, float]
"""(first event, final event) in milliseconds after the request was sent."""


def worker_request(path: str, body: bytes, headers: dict[str, str]) -> Request:
    """A Starlette POST request as the worker hands it to the function."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "server": ("127.0.0.1", 7071),
        "client": ("127.0.0.1", 50000),
        "root_path": "",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    return Request(scope, receive)


async def timed_lines(lines: AsyncIterator[bytes], started: float) -> Timing:
    """When the first and the final event arrived, reading complete NDJSON lines from ``lines``."""
    first = final = 0.0
    pending = b""
    async for chunk in lines:
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if not line:
                continue
            now = (time.perf_counter() - started) * 1000
            first = first or now
            if json.loads(line)["type"] == "final":
                final = now
    if not first or not final:
        raise RuntimeError("the turn's stream ended without a final event")
    return first, final


async def over_http(base_url: str, conversation: str) -> Callable[[], Awaitable[Timing]]:
    """A turn over a loopback server (the sample document uploaded first, not timed)."""
    client = loopback_client(base_url)
    await upload_http(client, conversation, [DOCUMENT])
    body = turn_body(conversation, [DOCUMENT])

    async def turn() -> Timing:
        started = time.perf_counter()
        async with client.stream("POST", "/api/orc", json=body, headers=NDJSON) as response:
            if response.status_code != 200:
                raise RuntimeError(f"turn failed: {response.status_code}")
            return await timed_lines(response.aiter_bytes(), started)

    return turn


def in_process(handler: Callable[[Request], Awaitable[Response]], conversation: str) -> Callable[[], Awaitable[Timing]]:
    """A turn through the function itself, as the worker invokes it."""
    body = json.dumps(turn_body(conversation, [DOCUMENT])).encode()

    async def turn() -> Timing:
        started = time.perf_counter()
        response = await handler(worker_request("/api/orc", body, NDJSON))
        if response.status_code != 200 or not isinstance(response, StreamingResponse):
            raise RuntimeError(f"turn failed: {response.status_code}")

        async def chunks() -> AsyncIterator[bytes]:
            async for chunk in response.body_iterator:
                yield chunk if isinstance(chunk, bytes) else chunk.encode()

        return await timed_lines(chunks(), started)

    return turn


async def measure(turns: int, latency: float, home: Path) -> dict[str, Any]:
    """Run ``turns`` turns on each path and compare their first events."""
    functions = RelayFunctionApp(create_app(bench_settings(home / "functions"), model=scripted_model(latency)))
    handler = functions.get_functions()[0].get_user_function()
    worker_proxy = Starlette(routes=[Route("/{path:path}", handler, methods=list(METHODS))])
    served = create_app(bench_settings(home / "serve"), model=scripted_model(latency))
    try:
        async with serve_on_loopback(served) as serve_url, serve_on_loopback(worker_proxy) as proxy_url:
            paths = {
                "orc serve": await over_http(serve_url, "bench-serve"),
                "function (worker's uvicorn)": await over_http(proxy_url, "bench-proxy"),
                "function (in process)": in_process(handler, "bench-proxy"),
            }
            for turn in paths.values():  # warm-up, not timed
                await turn()
            timings: dict[str, list[Timing]] = {name: [] for name in paths}
            for _ in range(turns):
                for name, turn in paths.items():
                    timings[name].append(await turn())
    finally:
        await functions.relay.shutdown()
    rows = [
        {
            "path": name,
            "first_p50_ms": summarize([first for first, _ in samples])["p50"],
            "first_p90_ms": summarize([first for first, _ in samples])["p90"],
            "final_p50_ms": summarize([final for _, final in samples])["p50"],
        }
        for name, samples in timings.items()
    ]
    serve_first = rows[0]["first_p50_ms"]
    worst = max(row["first_p50_ms"] for row in rows[1:])
    return {"turns": turns, "latency_s": latency, "rows": rows, "gap_ms": worst - serve_first}


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table and whether the target is met; exit 1 when it is not."""
    parser = argparse.ArgumentParser(prog="python -m bench.functions_stream", description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=30, help="timed turns per path")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the model takes per request")
    args = parser.parse_args(argv)
    forbid_model_requests()
    with temporary_home() as home:
        result = event_loop.run(measure(args.turns, args.latency, home))
    print(f"{result['turns']} turns per path, model latency {result['latency_s']} s")
    print(f"{'path':30} {'first p50':>10} {'first p90':>10} {'final p50':>10}")
    for row in result["rows"]:
        print(
            f"{row['path']:30} {row['first_p50_ms']:>8.1f}ms {row['first_p90_ms']:>8.1f}ms "
            f"{row['final_p50_ms']:>8.1f}ms"
        )
    met = result["gap_ms"] <= TARGET_MS
    print(
        f"first event, worst Functions path - orc serve: {result['gap_ms']:+.1f} ms (target ≤ {TARGET_MS:.0f} ms): "
        f"{'met' if met else 'NOT met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
