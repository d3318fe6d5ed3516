"""Target 3: 100 concurrent turns through the HTTP app on loopback take ≤ 3× one turn's wall time.

The server runs in a process of its own (``python -m bench.server``, uvicorn on a free 127.0.0.1 port) and the
load generator in the bench process, so the client's CPU is not counted as server time. The timed turns are
posted with aiohttp (``--client httpx`` for the earlier client): both share the machine's 2 cores with the
server, and aiohttp spends about 0.5 ms of CPU per request where httpx spent 4.
The model sleeps ``latency`` seconds per call (``asyncio.sleep``, so calls of different turns overlap). Every
conversation gets one small sample document uploaded beforehand (not timed). Then:

1. warm-up turns on their own conversations (imports, first-use caches; two per worker, at once);
2. ``single_runs`` turns one after the other, each on a fresh conversation: their median is "one turn";
3. ``turns`` turns at once (``asyncio.gather``), each on its own conversation: the total wall time. This burst
   is run ``bursts`` times (3 by default), each on conversations of its own, on the same server; the row
   reports the median burst, and every burst's ratio is kept (``burst_ratios``). One burst lasts about half a
   second, and this machine's speed drifts by up to 2x within seconds: a single burst measures the moment.

Every turn is a first turn with ``blob_names`` (document_chat, cache miss, 2 model calls). Everything is bounded
by timeouts.

Variants (rows):

- ``process``: one uvicorn worker process, on embedded storage and on memory stores (to separate the storage
  cost). One event loop uses one core, so this row is bound by that core's CPU (``cpu_bound_ms``);
- ``workers2``: two worker processes on embedded storage, as ``orc serve --workers 2`` runs them: one per core
  of the benchmark machine, **the target row**. Both share one SQLite file (WAL) and one blob folder; each has
  its own document_chat file-id cache and MCP session (every turn here is a cache miss anyway). The listening
  socket is bound with :func:`orc.http.serving.tcp_listener` so that ``TCP_NODELAY`` is set;
- ``workers2-stock`` (not run by default): the same with uvicorn's own socket, where every response waits
  about 40 ms on a delayed ACK (uvicorn issue #3149);
- ``inproc``: for comparison with the earlier figures, uvicorn as a task of the bench's own event loop, the
  client in the same loop (its CPU counted with the server's).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import aiohttp
import httpx

from bench.common import (
    REQUEST_TIMEOUT,
    SAMPLE_NAMES,
    BenchResult,
    Check,
    ServerOptions,
    StorageKind,
    bench_settings,
    loopback_client,
    post_turn,
    process_tree_cpu_seconds,
    profile_summary,
    scripted_model,
    serve_in_subprocess,
    serve_on_loopback,
    stores_for,
    summarize,
    temporary_home,
    turn_body,
    upload_http,
)
from orc.http import create_app

RATIO_LIMIT = 3.0
UPLOAD_CONCURRENCY = 8
UPLOAD_ATTEMPTS = 3

Variant = Literal["process", "workers2", "workers2-stock", "inproc"]
ALL_VARIANTS: tuple[Variant, ...] = ("process", "workers2", "workers2-stock", "inproc")
VARIANTS: tuple[Variant, ...] = ("process", "workers2", "inproc")  # the default run
VARIANT_LABELS: dict[Variant, str] = {
    "process": "server process, 1 worker",
    "workers2": "orc serve --workers 2 (one per core; shared SQLite, WAL)",
    "workers2-stock": "2 workers, uvicorn's socket (Nagle on)",
    "inproc": "in-process server + client, one loop (comparison)",
}
WORKERS: dict[Variant, int] = {"process": 1, "workers2": 2, "workers2-stock": 2, "inproc": 1}


@dataclass(frozen=True)
class Target:
    """Where the turns go, and whose CPU to read (``None``: the bench process itself serves)."""

    base_url: str
    server_pid: int | None
    log: Path | None = None


Client = Literal["aiohttp", "httpx"]
"""The load generator's HTTP client for the timed turns (uploads and set-up always use httpx)."""


async def _post_aiohttp(session: aiohttp.ClientSession, body: dict[str, Any]) -> dict[str, Any]:
    async with session.post("/api/orc", json=body) as response:
        if response.status != 200:
            raise RuntimeError(f"turn failed: {response.status} {(await response.text())[:300]}")
        result: dict[str, Any] = await response.json()
        return result


async def _bounded_turn(
    client: httpx.AsyncClient | aiohttp.ClientSession, conversation_id: str, name: str, limit_s: float
) -> dict[str, Any]:
    started = time.perf_counter()
    body = turn_body(conversation_id, [name])
    post = _post_aiohttp(client, body) if isinstance(client, aiohttp.ClientSession) else post_turn(client, body)
    answer = await asyncio.wait_for(post, limit_s)
    return {
        "wall_ms": (time.perf_counter() - started) * 1000,
        "model_calls": answer["metadata"]["model_calls"],
        "cache": answer["metadata"]["cache"],
    }


@contextlib.asynccontextmanager
async def _serve(
    variant: Variant, storage: StorageKind, latency: float, home: Path, profile_dir: Path | None
) -> AsyncIterator[Target]:
    if variant == "inproc":
        app = create_app(bench_settings(home), model=scripted_model(latency), stores=stores_for(storage))
        async with serve_on_loopback(app) as base_url:
            yield Target(base_url, None)
        return
    options = ServerOptions(
        latency=latency,
        storage=storage,
        workers=WORKERS[variant],
        stock_socket=variant == "workers2-stock",
        profile_dir=profile_dir,
    )
    async with serve_in_subprocess(home, options) as server:
        yield Target(server.base_url, server.pid, server.log)


async def measure(
    storage: StorageKind,
    variant: Variant = "process",
    *,
    turns: int,
    latency: float,
    single_runs: int,
    limit_s: float,
    profile: bool = False,
    http_client: Client = "aiohttp",
    bursts: int = 1,
) -> dict[str, Any]:
    """One turn alone vs ``turns`` at once (``bursts`` times), on ``storage`` served as ``variant``; returns a row
    of figures, those of the median burst.

    ``http_client`` posts the timed turns. aiohttp by default: the load generator shares the machine's cores
    with the server, and aiohttp's C parser costs it less CPU per request than httpx.

    ``profile`` (``process`` variant only) runs the server's concurrent phase under cProfile, switched on and off
    through ``bench.server``'s ``/bench/profile`` endpoints; the wall time of such a run is not a figure.
    """
    if profile and variant != "process":
        raise ValueError("only the single-worker server process can be profiled")
    if bursts < 1 or (profile and bursts != 1):
        raise ValueError("bursts must be at least 1, and 1 when profiling")
    workers = WORKERS[variant]
    with temporary_home() as home:
        profile_dir = home.parent / "profile" if profile else None
        async with (
            _serve(variant, storage, latency, home, profile_dir) as target,
            loopback_client(target.base_url, connections=turns + 8) as client,
            aiohttp.ClientSession(
                base_url=target.base_url,
                connector=aiohttp.TCPConnector(limit=turns + 8),
                timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT),
            ) as session,
        ):
            turn_client: httpx.AsyncClient | aiohttp.ClientSession = session if http_client == "aiohttp" else client
            names = {
                _burst_conversation(burst, i): SAMPLE_NAMES[i % len(SAMPLE_NAMES)]
                for burst in range(bursts)
                for i in range(turns)
            }
            names |= {f"bench-s-{i:03d}": SAMPLE_NAMES[i % len(SAMPLE_NAMES)] for i in range(single_runs)}
            warmups = [f"bench-w-{i}" for i in range(2 * workers)]
            names |= {conversation: SAMPLE_NAMES[0] for conversation in warmups}
            gate = asyncio.Semaphore(UPLOAD_CONCURRENCY)

            upload_retries = [0]

            async def upload(conversation_id: str, name: str) -> None:
                # Set-up, not timed: a 503 ("retry later") is retried a bounded number of times, and counted.
                async with gate:
                    for attempt in range(UPLOAD_ATTEMPTS):
                        try:
                            await asyncio.wait_for(upload_http(client, conversation_id, [name]), limit_s)
                            return
                        except RuntimeError as exc:
                            if " 503 " not in str(exc) or attempt == UPLOAD_ATTEMPTS - 1:
                                raise
                            upload_retries[0] += 1
                            await asyncio.sleep(0.1 * (attempt + 1))

            await asyncio.gather(*(upload(conversation, name) for conversation, name in names.items()))

            await asyncio.gather(*(_bounded_turn(turn_client, w, names[w], limit_s) for w in warmups))
            singles = [
                await _bounded_turn(turn_client, f"bench-s-{i:03d}", names[f"bench-s-{i:03d}"], limit_s)
                for i in range(single_runs)
            ]
            one_turn_ms = statistics.median(single["wall_ms"] for single in singles)

            if profile:
                (await client.post("/bench/profile/start")).raise_for_status()
            measured: list[dict[str, Any]] = []
            outcomes: list[Any] = []
            for burst in range(bursts):
                server_cpu_started = process_tree_cpu_seconds(target.server_pid) if target.server_pid else 0.0
                cpu_started = time.process_time()
                started = time.perf_counter()
                burst_outcomes = await asyncio.wait_for(
                    asyncio.gather(
                        *(
                            _bounded_turn(turn_client, conversation, names[conversation], limit_s)
                            for conversation in (_burst_conversation(burst, i) for i in range(turns))
                        ),
                        return_exceptions=True,
                    ),
                    limit_s,
                )
                total_ms = (time.perf_counter() - started) * 1000
                client_cpu_ms = (time.process_time() - cpu_started) * 1000
                server_cpu_ms = (
                    (process_tree_cpu_seconds(target.server_pid) - server_cpu_started) * 1000
                    if target.server_pid
                    else None
                )
                outcomes += burst_outcomes
                measured.append({"total_ms": total_ms, "client_cpu_ms": client_cpu_ms, "server_cpu_ms": server_cpu_ms})
            stats_file = ""
            if profile:
                stopped = await client.post("/bench/profile/stop")
                stopped.raise_for_status()
                stats_file = stopped.json()["stats_file"]
            profile_figures = profile_summary(Path(stats_file), turns) if stats_file else None
        # The server has stopped; keep the end of its log when turns failed (the folder goes away next).
        log_tail = (
            _tail(target.log)
            if target.log is not None and any(isinstance(outcome, BaseException) for outcome in outcomes)
            else ""
        )

    ok = [outcome for outcome in outcomes if isinstance(outcome, dict)]
    errors = [
        f"{type(outcome).__name__}: {outcome}"[:200] for outcome in outcomes if isinstance(outcome, BaseException)
    ]
    per_turn = summarize([outcome["wall_ms"] for outcome in ok]) if ok else {}
    in_process = target.server_pid is None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    for figures in measured:
        # An event loop runs on one core: one process's CPU bounds the run by itself; the processes together
        # share the machine's cores.
        server_ms = figures["client_cpu_ms"] if in_process else figures["server_cpu_ms"] or 0.0
        together_ms = server_ms + (0.0 if in_process else figures["client_cpu_ms"])
        figures["server_ms"] = server_ms
        figures["cpu_bound_ms"] = max(server_ms / workers, together_ms / cores)
    # The median burst by wall time (the lower middle one for an even count) stands for the run.
    median = sorted(measured, key=lambda figures: figures["total_ms"])[(len(measured) - 1) // 2]
    total_ms, client_cpu_ms, server_ms, cpu_bound_ms = (
        median["total_ms"],
        median["client_cpu_ms"],
        median["server_ms"],
        median["cpu_bound_ms"],
    )
    row: dict[str, Any] = {
        "storage": storage,
        "variant": VARIANT_LABELS[variant] + (", profiled" if profile else ""),
        "variant_key": variant,
        "workers": workers,
        "client": http_client,
        "turns": turns,
        "latency_s": latency,
        "one_turn_ms": round(one_turn_ms, 2),
        "single_runs_ms": [round(single["wall_ms"], 2) for single in singles],
        "total_ms": round(total_ms, 2),
        "ratio": round(total_ms / one_turn_ms, 2),
        "bursts": len(measured),
        "burst_ratios": [round(figures["total_ms"] / one_turn_ms, 2) for figures in measured],
        "burst_server_cpu_ms_per_turn": [round(figures["server_ms"] / turns, 2) for figures in measured],
        # Diagnostic, not a target: the CPU the server and the client spent during the run, on the cores they
        # can use, is the least wall time the run could take however well it overlaps; what is left over, in
        # turns, is the wall time that CPU does not explain (about 1 when nothing else serializes).
        "cpu_bound_ms": round(cpu_bound_ms, 1),
        "ratio_beyond_cpu": round(max(total_ms - cpu_bound_ms, 0.0) / one_turn_ms, 2),
        "ok": len(ok),
        "errors": len(errors),
        "error_samples": errors[:3],
        "upload_503_retries": upload_retries[0],
        "model_calls_total": sum(outcome["model_calls"] for outcome in ok),
        "model_calls_per_turn": sorted({outcome["model_calls"] for outcome in ok}),
        "cache": sorted({str(outcome["cache"]) for outcome in ok}),
        # In-process, the client and the server share the bench process: its CPU is theirs together.
        "server_cpu_ms_per_turn": round(server_ms / turns, 2),
        "client_cpu_ms_per_turn": None if in_process else round(client_cpu_ms / turns, 2),
        "cpu_note": "bench process (server + client)" if in_process else "server process tree / bench process",
        "turn_p50_ms": per_turn.get("p50"),
        "turn_p90_ms": per_turn.get("p90"),
        "turn_max_ms": per_turn.get("max"),
        # If the turns only waited on the model, `turns` at once would take about one turn; this is the floor.
        "model_floor_ms": round(2 * latency * 1000, 1),
    }
    if log_tail:
        row["server_log_tail"] = log_tail
    if profile_figures is not None:
        row["profile"] = profile_figures
    return row


def _burst_conversation(burst: int, index: int) -> str:
    return f"bench-c{burst}-{index:03d}"


def _tail(log: Path, limit: int = 3000) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-limit:]
    return ""


async def run(
    turns: int = 100,
    latency: float = 0.1,
    single_runs: int = 5,
    limit_s: float = 120.0,
    storages: tuple[StorageKind, ...] = ("embedded", "memory"),
    variants: tuple[Variant, ...] = VARIANTS,
    profile: bool = False,
    http_client: Client = "aiohttp",
    bursts: int = 3,
) -> BenchResult:
    """Run :func:`measure` per storage and variant; check the ≤ 3× target on the embedded server process.

    ``process`` runs on each of ``storages``; the other variants on embedded storage only. With
    ``profile``, one more single-worker embedded run under cProfile (its figures go to ``details``).
    """
    result = BenchResult(name="concurrency")
    # The target is checked on the app served with one process per core of this 2-core machine (`orc serve
    # --workers 2`); with one worker the run is bound by that one core's CPU (see cpu_bound_ms), which the
    # single-worker row shows. Without the 2-worker row, the single worker is checked.
    gated: Variant = "workers2" if "workers2" in variants else "process"
    plan: list[tuple[StorageKind, Variant]] = []
    if "process" in variants:
        plan += [(storage, "process") for storage in storages]
    plan += [("embedded", variant) for variant in ALL_VARIANTS[1:] if variant in variants]
    for storage, variant in plan:
        try:
            row = await measure(
                storage,
                variant,
                turns=turns,
                latency=latency,
                single_runs=single_runs,
                limit_s=limit_s,
                http_client=http_client,
                bursts=bursts,
            )
        except (RuntimeError, TimeoutError, httpx.HTTPError) as exc:  # a set-up failure: report it, go on
            row = {"storage": storage, "variant": VARIANT_LABELS[variant], "variant_key": variant, "turns": turns}
            row["failed"] = f"{type(exc).__name__}: {exc}"[:500]
            result.rows.append(row)
            result.details.setdefault("failures", {})[row["variant"]] = [row["failed"]]
            if storage == "embedded" and variant == gated:
                result.checks.append(Check(f"{turns} concurrent turns, {VARIANT_LABELS[variant]}: ran", 1, 0, ""))
            continue
        result.rows.append(row)
        if row["upload_503_retries"] or row["errors"]:
            result.details.setdefault("retried_or_failed", {})[row["variant"]] = {
                "upload_503_retries": row["upload_503_retries"],
                "failed_turns": row["errors"],
                "samples": row["error_samples"],
            }
        if storage == "embedded" and variant == gated:
            where = f"HTTP loopback, {VARIANT_LABELS[variant]}, embedded"
            result.checks.append(Check(f"{turns} concurrent turns / one turn, {where}", row["ratio"], RATIO_LIMIT, "×"))
            result.checks.append(Check(f"{turns} concurrent turns: failed turns", row["errors"], 0, ""))
    if profile:
        profiled = await measure(
            "embedded", "process", turns=turns, latency=latency, single_runs=1, limit_s=limit_s * 3, profile=True
        )
        result.details["profile"] = profiled.pop("profile", None)
        result.details["profiled_run"] = profiled
    return result
