"""One principal floods ``POST /api/orc`` at 150 concurrent while another does warm turns (issue 14, target 2).

Two API keys on one server (uvicorn on loopback, embedded storage, the offline model): ``calm`` posts
``calm_turns`` turns one after the other, first alone (its idle latency), then while ``flood`` sends
``flood_requests`` turns with ``flood_concurrency`` in flight. Rows:

- ``quotas``: the defaults a deployment gets (``ORC_MAX_CONCURRENT_TURNS=4``) with a rate limit the calm caller
  stays under (``ORC_RATE_LIMIT=120/minute``): the flooder is refused with 429s;
- ``no-quotas``: the same without rate limit and with an unbounded concurrency cap (how orc was before issue 14).

Target: the calm caller's p95 under flood ≤ 2× its idle p95, and the flooder gets 429s. The server is ``orc serve``
(one worker, ``ORC_`` settings in its environment) in a process of its own; the flooder is aiohttp in another
process, the calm caller aiohttp in the bench process. All share the machine's 2 cores, so the flooder's client
CPU competes with the server's.

    python -m bench.flood [--calm-turns 40] [--flood-requests 1000] [--flood-concurrency 150]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from bench.common import free_port, percentile, summarize, temporary_home

KEYS = {
    "key-calm": {"organization": "acme", "user": "calm"},
    "key-flood": {"organization": "acme", "user": "flood"},
}
QUESTION = "What is the monthly rent?"
START_TIMEOUT = 60.0
ROWS: dict[str, dict[str, str]] = {
    "quotas": {"ORC_RATE_LIMIT": "120/minute", "ORC_MAX_CONCURRENT_TURNS": "4"},
    "no-quotas": {"ORC_RATE_LIMIT": "off", "ORC_MAX_CONCURRENT_TURNS": "100000"},
}


async def post(session: aiohttp.ClientSession, base_url: str, key: str) -> int:
    """One turn on a fresh conversation; its status."""
    body = {"question": QUESTION, "conversation_id": str(uuid.uuid4())}
    async with session.post(f"{base_url}/api/orc", json=body, headers={"X-API-Key": key}) as response:
        await response.read()
        return response.status


async def calm_turns(session: aiohttp.ClientSession, base_url: str, count: int) -> list[float]:
    """``count`` turns one after the other; their latencies in ms."""
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        status = await post(session, base_url, "key-calm")
        samples.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise RuntimeError(f"the calm caller was refused: {status}")
    return samples


async def flood(session: aiohttp.ClientSession, base_url: str, requests: int, concurrency: int) -> Counter[int]:
    """``requests`` turns of the flooder with ``concurrency`` in flight; the count of each status."""
    statuses: Counter[int] = Counter()
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            statuses[await post(session, base_url, "key-flood")] += 1

    await asyncio.gather(*(one() for _ in range(requests)))
    return statuses


async def flood_only(base_url: str, requests: int, concurrency: int) -> dict[str, int]:
    """The flooder process: say it is starting, flood, return the statuses it got."""
    connector = aiohttp.TCPConnector(limit=concurrency + 8)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:
        print("flooding", flush=True)
        statuses = await flood(session, base_url, requests, concurrency)
    return {str(code): count for code, count in sorted(statuses.items())}


@contextlib.contextmanager
def orc_serve(home: Path, settings: dict[str, str]) -> Iterator[str]:
    """``orc serve`` on a free loopback port with ``settings`` as ``ORC_`` variables; its base URL when healthy."""
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("ORC_")}
    env.update({"ORC_HOME": str(home), "ORC_AUTH": "api-key", "ORC_API_KEYS": json.dumps(KEYS), **settings})
    log = home.parent / "serve.log"
    home.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:
        command = [sys.executable, "-c", "from orc.cli import main; main()", "serve", "--port", str(port)]
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"orc serve did not start:\n{log.read_text(errors='replace')[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base_url}/api/health", timeout=2, trust_env=False).status_code == 200:
                    break
            time.sleep(0.05)  # poll interval, not a wait for readiness
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=START_TIMEOUT)


async def calm_under_flood(
    session: aiohttp.ClientSession, base_url: str, calm: int, module: str, arguments: list[str], *, wait: float
) -> tuple[list[float], Counter[int]]:
    """The calm caller's turn times while ``python -m module --flood-only base_url *arguments`` floods the server,
    and the flooder's response statuses.

    The flooder is a process of its own: in this event loop, its connections' client work would delay the calm
    caller's own reads and be measured as the server's doing."""
    flooder = await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, "--flood-only", base_url, *arguments, stdout=asyncio.subprocess.PIPE
    )
    assert flooder.stdout is not None
    ready = await asyncio.wait_for(flooder.stdout.readline(), START_TIMEOUT)
    if ready.strip() != b"flooding":
        raise RuntimeError(f"the flooder did not start: {ready!r}")
    under_flood = await calm_turns(session, base_url, calm)
    output, _ = await asyncio.wait_for(flooder.communicate(), wait)
    return under_flood, Counter({int(code): count for code, count in json.loads(output).items()})


async def run_row(name: str, calm: int, requests: int, concurrency: int) -> dict[str, Any]:
    """One row: idle calm turns, then calm turns under flood."""
    with temporary_home() as home, orc_serve(home, ROWS[name]) as base_url:
        connector = aiohttp.TCPConnector(limit=concurrency + 8)
        timeout = aiohttp.ClientTimeout(total=120)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:
            await calm_turns(session, base_url, 5)  # warm-up: imports and first-use caches
            idle = await calm_turns(session, base_url, calm)
            under_flood, statuses = await calm_under_flood(
                session,
                base_url,
                calm,
                "bench.flood",
                ["--flood-requests", str(requests), "--flood-concurrency", str(concurrency)],
                wait=300,
            )
    idle_p95, flood_p95 = percentile(idle, 95), percentile(under_flood, 95)
    return {
        "row": name,
        "calm_idle_ms": summarize(idle),
        "calm_under_flood_ms": summarize(under_flood),
        "p95_ratio": round(flood_p95 / idle_p95, 2),
        "flooder_statuses": dict(sorted(statuses.items())),
        "passes": flood_p95 <= 2 * idle_p95 and statuses.get(429, 0) > 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calm-turns", type=int, default=40)
    parser.add_argument("--flood-requests", type=int, default=1000)
    parser.add_argument("--flood-concurrency", type=int, default=150)
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--flood-only", metavar="URL", help="be the flooder process of a run (internal)")
    args = parser.parse_args()
    if args.flood_only:
        print(json.dumps(asyncio.run(flood_only(args.flood_only, args.flood_requests, args.flood_concurrency))))
        return
    for name in args.rows:
        row = asyncio.run(run_row(name, args.calm_turns, args.flood_requests, args.flood_concurrency))
        print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
