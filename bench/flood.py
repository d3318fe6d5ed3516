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
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from bench.common import free_port, percentile, summarize, temporary_home

MAX_ROUNDS = 10
CALM_USERS = 40
"""The calm caller's turns go round this many users of its organization, so that windows of several seconds of
back-to-back turns stay under the turn rate the flooder is refused by."""
CALM = [f"key-calm-{n}" for n in range(CALM_USERS)]


def calm_keys(organization: str) -> dict[str, dict[str, str]]:
    """The calm caller's API keys (:data:`CALM`), users of ``organization``."""
    return {key: {"organization": organization, "user": key.removeprefix("key-")} for key in CALM}


KEYS = {**calm_keys("acme"), "key-flood": {"organization": "acme", "user": "flood"}}
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


async def calm_turns(session: aiohttp.ClientSession, base_url: str, count: int, seconds: float = 0.0) -> list[float]:
    """At least ``count`` turns one after the other, for at least ``seconds``; their latencies in ms."""
    samples: list[float] = []
    until = time.perf_counter() + seconds
    while len(samples) < count or time.perf_counter() < until:
        started = time.perf_counter()
        status = await post(session, base_url, CALM[len(samples) % CALM_USERS])
        samples.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise RuntimeError(f"the calm caller was refused: {status}")
    return samples


async def flood(session: aiohttp.ClientSession, base_url: str, requests: int, concurrency: int) -> Counter[str]:
    """Turns of the flooder with ``concurrency`` in flight until ``requests`` are sent or the bench says stop."""
    return await flood_until_stopped(lambda: post(session, base_url, "key-flood"), requests, concurrency)


async def flood_until_stopped(
    operation: Callable[[], Awaitable[int | str]], requests: int, concurrency: int
) -> Counter[str]:
    """Run ``operation`` with ``concurrency`` in flight until ``requests`` have started or this process's standard
    input closes (the bench's calm window is over); the count of each outcome (a status or an error code).

    Stopping with the calm window keeps every measured window under a flood that is still going, and lets the
    bench alternate idle and flooded windows without waiting for a flood's tail."""
    outcomes: Counter[str] = Counter()
    stop = asyncio.Event()
    started = 0

    async def watch_stdin() -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.buffer.read)
        stop.set()

    async def worker() -> None:
        nonlocal started
        while started < requests and not stop.is_set():
            started += 1
            try:
                outcomes[str(await operation())] += 1
            except (aiohttp.ClientError, httpx.HTTPError) as exc:  # a refusal sent before the body was read
                outcomes[type(exc).__name__] += 1

    watcher = asyncio.create_task(watch_stdin())
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    watcher.cancel()
    return outcomes


async def flood_only(base_url: str, requests: int, concurrency: int) -> dict[str, int]:
    """The flooder process: say it is starting, flood, return the outcomes it got."""
    connector = aiohttp.TCPConnector(limit=concurrency + 8)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:
        print("flooding", flush=True)
        outcomes = await flood(session, base_url, requests, concurrency)
    return dict(sorted(outcomes.items()))


@contextlib.contextmanager
def serve_process(
    home: Path, settings: dict[str, str], keys: dict[str, dict[str, str]] = KEYS
) -> Iterator[tuple[str, int]]:
    """``orc serve`` on a free loopback port with ``settings`` as ``ORC_`` variables and ``keys`` as its API keys;
    its base URL and pid once healthy."""
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("ORC_")}
    env.update({"ORC_HOME": str(home), "ORC_AUTH": "api-key", "ORC_API_KEYS": json.dumps(keys), **settings})
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
        yield base_url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=START_TIMEOUT)


@contextlib.contextmanager
def orc_serve(home: Path, settings: dict[str, str]) -> Iterator[str]:
    """:func:`serve_process` with the flood's two organizations' keys; its base URL once healthy."""
    with serve_process(home, settings) as (base_url, _):
        yield base_url


async def calm_under_flood(
    session: aiohttp.ClientSession,
    base_url: str,
    calm: int,
    seconds: float,
    module: str,
    arguments: list[str],
    *,
    wait: float,
) -> tuple[list[float], Counter[str]]:
    """The calm caller's turn times while ``python -m module --flood-only base_url *arguments`` floods the server,
    and the flooder's outcomes (it stops when the calm turns are done).

    The flooder is a process of its own: in this event loop, its connections' client work would delay the calm
    caller's own reads and be measured as the server's doing."""
    flooder = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        module,
        "--flood-only",
        base_url,
        *arguments,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert flooder.stdout is not None and flooder.stdin is not None
    ready = await asyncio.wait_for(flooder.stdout.readline(), START_TIMEOUT)
    if ready.strip() != b"flooding":
        raise RuntimeError(f"the flooder did not start: {ready!r}")
    under_flood = await calm_turns(session, base_url, calm, seconds)
    flooder.stdin.close()
    output = await asyncio.wait_for(flooder.stdout.read(), wait)
    await flooder.wait()
    return under_flood, Counter({code: count for code, count in json.loads(output).items()})


async def alternate(
    session: aiohttp.ClientSession,
    base_url: str,
    calm: int,
    seconds: float,
    rounds: int,
    flooder: Callable[[int], tuple[str, list[str]]],
    *,
    wait: float,
) -> dict[str, Any]:
    """``rounds`` pairs of windows of calm turns (at least ``calm`` turns and ``seconds`` each), idle then flooded
    (``flooder(round)`` = the flooder's module and arguments), and the ratio of the median flooded p95 to the
    median idle p95.

    The host's speed drifts within seconds: one idle window followed by one flooded window measures the drift as
    much as the flood. Alternating them and comparing medians puts both under the same spells."""
    idle_p95s: list[float] = []
    flood_p95s: list[float] = []
    idle_all: list[float] = []
    flood_all: list[float] = []
    outcomes: Counter[str] = Counter()
    for number in range(rounds):
        idle = await calm_turns(session, base_url, calm, seconds)
        module, arguments = flooder(number)
        under_flood, got = await calm_under_flood(session, base_url, calm, seconds, module, arguments, wait=wait)
        idle_p95s.append(percentile(idle, 95))
        flood_p95s.append(percentile(under_flood, 95))
        idle_all += idle
        flood_all += under_flood
        outcomes += got
    ratio = statistics.median(flood_p95s) / statistics.median(idle_p95s)
    return {
        "rounds": rounds,
        "calm_idle_ms": summarize(idle_all),
        "calm_under_flood_ms": summarize(flood_all),
        "idle_p95s_ms": [round(value, 1) for value in idle_p95s],
        "flood_p95s_ms": [round(value, 1) for value in flood_p95s],
        "round_ratios": [round(f / i, 2) for i, f in zip(idle_p95s, flood_p95s, strict=True)],
        "p95_ratio": round(ratio, 2),
        "flooder_outcomes": dict(sorted(outcomes.items())),
        "passes": ratio <= 2,
    }


async def run_row(name: str, calm: int, seconds: float, requests: int, concurrency: int, rounds: int) -> dict[str, Any]:
    """One row: ``rounds`` idle and flooded windows of calm turns."""
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ValueError(f"--rounds must be 1 to {MAX_ROUNDS}")
    with temporary_home() as home, orc_serve(home, ROWS[name]) as base_url:
        connector = aiohttp.TCPConnector(limit=concurrency + 8)
        timeout = aiohttp.ClientTimeout(total=120)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:
            await calm_turns(session, base_url, 5)  # warm-up: imports and first-use caches
            arguments = ["--flood-requests", str(requests), "--flood-concurrency", str(concurrency)]
            flooder = lambda _: ("bench.flood", arguments)  # noqa: E731
            row = await alternate(session, base_url, calm, seconds, rounds, flooder, wait=300)
    row["passes"] = row["passes"] and row["flooder_outcomes"].get("429", 0) > 0
    return {"row": name, **row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calm-turns", type=int, default=40)
    parser.add_argument("--flood-requests", type=int, default=1000)
    parser.add_argument("--flood-concurrency", type=int, default=150)
    parser.add_argument("--window-seconds", type=float, default=3.0, help="the shortest calm window")
    parser.add_argument("--rounds", type=int, default=3, help="idle and flooded windows, alternated")
    parser.add_argument("--rows", nargs="*", default=list(ROWS), choices=list(ROWS))
    parser.add_argument("--flood-only", metavar="URL", help="be the flooder process of a run (internal)")
    args = parser.parse_args()
    if args.flood_only:
        print(json.dumps(asyncio.run(flood_only(args.flood_only, args.flood_requests, args.flood_concurrency))))
        return
    for name in args.rows:
        row = asyncio.run(
            run_row(
                name, args.calm_turns, args.window_seconds, args.flood_requests, args.flood_concurrency, args.rounds
            )
        )
        print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
