"""Slow unauthenticated connections against ``orc serve`` (issue 36): thousands of clients that send a request
head announcing a large body and then drip it, a byte every few seconds, at a route the server answers without
reading the body (an upload without a key: 401). Loopback only; every phase stops by itself.

Before issue 36 such a connection was never closed (each byte put off the keep-alive timeout) and 8,191 of them
made ``/api/health`` answer 503. Now the body of a request answered without reading it has a deadline: the
connection lingers for the client to finish (``LINGER_SECONDS``), then closes.

``orc serve`` (api-key), the attacker and the calm caller each run in a process of their own. The calm caller
(another organization) takes turns, idle and under attack; a probe polls ``/api/health`` every 0.2 s. The attacker
keeps ``--connections`` open, reconnecting when the server closes one (``--no-reconnect``: opens them once).
Targets: health always 200; the calm caller's p95 under attack within 2× its idle p95.

    python -m bench.slow_connections [--connections 8000] [--attack-seconds 60] [--drip-seconds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import sys
import time
from collections import Counter
from typing import Any

import aiohttp

from bench.attack import KEYS, _calm_turns
from bench.common import percentile, summarize, temporary_home
from orc.http.connection_limits import LINGER_SECONDS
from tests.serving import orc_serve

START_TIMEOUT = 120.0
HEAD = (
    "POST /api/sessions/s1/context/files HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    "Content-Type: multipart/form-data; boundary=x\r\nContent-Length: 10000000\r\n\r\n"
)


async def _slow_connection(
    port: int, drip: float, stop: asyncio.Event, stats: Counter[str], lifetimes: list[float]
) -> None:
    """One connection: the head and a byte, then a byte every ``drip`` seconds until the server cuts it off. The
    answer and the server's half-close (FIN) are read and ignored: a hostile client drips on regardless."""
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        stats["connect_failed"] += 1
        await asyncio.sleep(drip)  # a refused connection is tried again after a drip's pause
        return
    started = time.monotonic()
    stats["opened"] += 1
    try:
        writer.write(HEAD.encode() + b"-")
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), START_TIMEOUT)
        stats[f"answered_{status.split(b' ')[1].decode() if status.count(b' ') >= 2 else 'nothing'}"] += 1
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), drip)
            writer.write(b"-")  # raises once the server has closed and reset the connection
            await writer.drain()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(reader.read(65536), 0.01)  # drain what came, EOF included
        stats["open_at_end"] += 1
    except (OSError, ConnectionError, TimeoutError):
        stats["cut_off"] += 1
        lifetimes.append(time.monotonic() - started)
    finally:
        writer.close()


async def attack(base_url: str, connections: int, seconds: float, drip: float, reconnect: bool) -> dict[str, Any]:
    """The attacker process: ``connections`` slow connections for ``seconds``, kept up when ``reconnect``."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    port = int(base_url.rsplit(":", 1)[1])
    stop = asyncio.Event()
    stats: Counter[str] = Counter()
    lifetimes: list[float] = []
    most_open = 0

    async def keep_one() -> None:
        while not stop.is_set():
            await _slow_connection(port, drip, stop, stats, lifetimes)
            if not reconnect:
                return

    async def count_open() -> None:
        nonlocal most_open
        while not stop.is_set():
            most_open = max(most_open, stats["opened"] - stats["cut_off"])
            await asyncio.sleep(0.5)  # a sample of how many are open

    tasks = []
    for index in range(connections):
        tasks.append(asyncio.create_task(keep_one()))
        if index % 200 == 199:
            await asyncio.sleep(0.05)  # open them in waves: the listen backlog is finite
    counting = asyncio.create_task(count_open())
    print("attacking", flush=True)
    await asyncio.sleep(seconds)  # the attack's length
    stop.set()
    await asyncio.wait(tasks, timeout=drip + 30)
    for task in tasks:
        task.cancel()
    counting.cancel()
    return {
        "connections": connections,
        "reconnect": reconnect,
        "most_open": most_open,
        "stats": dict(stats),
        "lifetime_s": summarize([t * 1000 for t in lifetimes]) if lifetimes else None,
    }


async def run(connections: int, seconds: float, drip: float, reconnect: bool) -> dict[str, Any]:
    settings = {"ORC_RATE_LIMIT": "off", "ORC_MAX_CONCURRENT_TURNS": "100000"}
    env = {"ORC_AUTH": "api-key", "ORC_API_KEYS": json.dumps(KEYS), **settings}
    with temporary_home() as home, orc_serve(home, env=env) as (base_url, _):
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=120), trust_env=False) as calm:
            await _calm_turns(calm, base_url, 0, 5)  # warm-up
            idle = await _calm_turns(calm, base_url, time.monotonic() + 10, 40)
            stop = asyncio.Event()
            health: Counter[int] = Counter()

            async def watch() -> None:
                async with aiohttp.ClientSession(trust_env=False) as probe:
                    while not stop.is_set():
                        try:
                            async with probe.get(f"{base_url}/api/health", timeout=aiohttp.ClientTimeout(5)) as r:
                                health[r.status] += 1
                        except (aiohttp.ClientError, TimeoutError):
                            health[0] += 1
                        await asyncio.sleep(0.2)  # the probe's interval

            command = [sys.executable, "-m", "bench.slow_connections", "--attacker", base_url]
            command += ["--connections", str(connections), "--attack-seconds", str(seconds)]
            command += ["--drip-seconds", str(drip), *([] if reconnect else ["--no-reconnect"])]
            attacker = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
            assert attacker.stdout is not None
            ready = await asyncio.wait_for(attacker.stdout.readline(), START_TIMEOUT)
            if ready.strip() != b"attacking":
                raise RuntimeError(f"the attacker did not start: {ready!r}")
            watching = asyncio.create_task(watch())
            under_attack = await _calm_turns(calm, base_url, time.monotonic() + seconds - 2, 40)
            output, _ = await asyncio.wait_for(attacker.communicate(), seconds + drip + 90)
            stop.set()
            await watching
            attacked = json.loads(output)
            idle += await _calm_turns(calm, base_url, time.monotonic() + 10, 40)
    idle_p95, attack_p95 = percentile(idle, 95), percentile(under_attack, 95)
    return {
        "calm_idle_ms": summarize(idle),
        "calm_under_attack_ms": summarize(under_attack),
        "p95_ratio": round(attack_p95 / idle_p95, 2),
        "health": dict(sorted(health.items())),
        "linger_seconds": LINGER_SECONDS,
        **attacked,
        "passes": attack_p95 <= 2 * idle_p95 and set(health) == {200},
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.slow_connections", description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=8000)
    parser.add_argument("--attack-seconds", type=float, default=60.0)
    parser.add_argument("--drip-seconds", type=float, default=4.0)
    parser.add_argument("--no-reconnect", action="store_true", help="open the connections once, never again")
    parser.add_argument("--attacker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.attacker:
        result = asyncio.run(
            attack(args.attacker, args.connections, args.attack_seconds, args.drip_seconds, not args.no_reconnect)
        )
        print(json.dumps(result), flush=True)
        return
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    result = asyncio.run(run(args.connections, args.attack_seconds, args.drip_seconds, not args.no_reconnect))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
