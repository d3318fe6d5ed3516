"""The route table and the stream guards, through ``orc serve`` (issue 36): every route the app serves is classified
by ``orc/http/route_table.py``, and every stream — the ones added after the stream guard was written included —
carries the same per-principal cap and idle timeout.

For each route that streams (always, or when ``Accept`` asks for it) one principal holds its cap of open streams,
then asks for one more of that route: refused 429 ``too_many_streams``? For each route that always streams, one
stream is opened and left silent: how long until the server ends it (``ORC_STREAM_IDLE_SECONDS``)?

    python -m bench.route_guards [--cap 3] [--idle 2]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.common import machine_info, temporary_home
from orc.http.app import MCP_PATH, Dispatcher, create_app
from orc.http.route_table import ROUTES, RouteTable, served_routes, unclassified
from orc.settings import Settings
from tests.serving import orc_serve

KEYS = {"key-a": {"organization": "acme", "user": "a"}}
LEASE = b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first day of each month."
NDJSON = {"Accept": "application/x-ndjson"}


def serve(home: Path, **settings: str) -> contextlib.AbstractContextManager[tuple[str, int]]:
    """``orc serve`` with API keys and ``settings`` (``ORC_`` variables); waits as long as a busy machine needs."""
    return orc_serve(home, env={"ORC_AUTH": "api-key", "ORC_API_KEYS": json.dumps(KEYS), **settings})


def classification() -> dict[str, Any]:
    app: Any = create_app(Settings())
    while not isinstance(app, Dispatcher):
        app = app.app
    served = served_routes(app.api, MCP_PATH)
    return {
        "served_routes": len(set(served)),
        "unclassified": unclassified(served, RouteTable()),
        "by_class": dict(sorted(Counter(route.kind for route in ROUTES).items())),
        "streaming_routes": sorted(
            f"{route.method} {route.path} ({route.guards.streams})"
            for route in ROUTES
            if route.guards.streams != "never"
        ),
    }


def paused(http: httpx.Client) -> str:
    uploaded = http.post("/api/sessions/c1/context/files", files=[("files", ("lease.txt", LEASE, "text/plain"))])
    uploaded.raise_for_status()
    ask = {"question": "What is the parking fee?", "conversation_id": "c1", "blob_names": ["lease.txt"]}
    answer = http.post("/api/orc", json={**ask, "context_requests": "allow"})
    answer.raise_for_status()
    request_id: str = answer.json()["request_id"]
    return request_id


def requests(request_id: str) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """One request of each streaming route: method, path, extra arguments."""
    base = f"/api/sessions/c1/context-requests/{request_id}"
    supply = {"payloads": [{"slot": "evidence", "text": "Parking costs 80 euros a month."}]}
    return {
        "GET /api/mcp": ("GET", "/api/mcp", {"headers": {"Accept": "text/event-stream"}}),
        "GET …/context/stream": ("GET", "/api/sessions/c1/context/stream", {}),
        "GET …/context-requests/{id}/events": ("GET", f"{base}/events", {}),
        "POST /api/orc (NDJSON)": ("POST", "/api/orc", {"json": {"question": "Rent?"}, "headers": NDJSON}),
        "POST …/supply (NDJSON)": ("POST", f"{base}/supply", {"json": supply, "headers": NDJSON}),
        "POST …/run-without (SSE)": ("POST", f"{base}/run-without", {"headers": {"Accept": "text/event-stream"}}),
    }


@contextlib.contextmanager
def holding(http: httpx.Client, path: str, count: int) -> Iterator[list[int]]:
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(http.stream("GET", path)).status_code for _ in range(count)]


def caps(base_url: str, cap: int) -> dict[str, str]:
    with httpx.Client(base_url=base_url, headers={"X-API-Key": "key-a"}, timeout=120, trust_env=False) as http:
        request_id = paused(http)
        found = {}
        with holding(http, f"/api/sessions/c1/context-requests/{request_id}/events", cap) as held:
            assert held == [200] * cap, held
            for name, (method, path, extra) in requests(request_id).items():
                answer = http.request(method, path, **extra)
                code = answer.json().get("code") if answer.status_code >= 400 else None
                found[name] = f"{answer.status_code} {code or ''}".strip()
    return found


def idle_ends(base_url: str) -> dict[str, float | None]:
    with httpx.Client(base_url=base_url, headers={"X-API-Key": "key-a"}, timeout=120, trust_env=False) as http:
        request_id = paused(http)
        found: dict[str, float | None] = {}
        for name, (method, path, extra) in requests(request_id).items():
            if method != "GET" or path.endswith("/context/stream"):
                continue  # the digest stream ends by itself once nothing is parsing
            started = time.monotonic()
            with http.stream(method, path, **extra) as stream:
                for _ in stream.iter_raw():
                    pass  # until the server ends it
            found[name] = round(time.monotonic() - started, 2)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.route_guards", description=__doc__.split("\n")[0])
    parser.add_argument("--cap", type=int, default=3, help="ORC_MAX_STREAMS_PER_PRINCIPAL for the run")
    parser.add_argument("--idle", type=float, default=2.0, help="ORC_STREAM_IDLE_SECONDS for the idle run")
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": machine_info(), "table": classification()}
    with (
        temporary_home() as home,
        serve(home, ORC_RATE_LIMIT="off", ORC_MAX_STREAMS_PER_PRINCIPAL=str(args.cap)) as (
            base_url,
            _,
        ),
    ):
        result["over_the_cap"] = caps(base_url, args.cap)
    with temporary_home() as home, serve(home, ORC_STREAM_IDLE_SECONDS=str(args.idle)) as (url, _):
        result["idle_stream_ended_after_s"] = idle_ends(url)
        result["idle_seconds"] = args.idle
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
