"""Target 3: 100 concurrent turns through the HTTP app on loopback take ≤ 3× one turn's wall time.

uvicorn serves the app on a free 127.0.0.1 port as a task of this process's event loop; the model sleeps
``latency`` seconds per call (``asyncio.sleep``, so calls of different turns overlap). Every conversation gets
one small sample document uploaded beforehand (not timed). Then:

1. one warm-up turn on its own conversation (imports, first-use caches);
2. ``single_runs`` turns one after the other, each on a fresh conversation: their median is "one turn";
3. ``turns`` turns at once (``asyncio.gather``), each on its own conversation: the total wall time.

Every turn is a first turn with ``blob_names`` (document_chat, cache miss, 2 model calls). The client runs in
the same event loop as the server, so its cost is in the figures too. Everything is bounded by timeouts.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import statistics
import time
from typing import Any

import httpx

from bench.common import (
    SAMPLE_NAMES,
    BenchResult,
    Check,
    StorageKind,
    bench_settings,
    cached_validate_function,
    loopback_client,
    patched_jsonschema_validate,
    post_turn,
    profile_summary,
    scripted_model,
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


async def _bounded_turn(client: httpx.AsyncClient, conversation_id: str, name: str, limit_s: float) -> dict[str, Any]:
    started = time.perf_counter()
    answer = await asyncio.wait_for(post_turn(client, turn_body(conversation_id, [name])), limit_s)
    return {
        "wall_ms": (time.perf_counter() - started) * 1000,
        "model_calls": answer["metadata"]["model_calls"],
        "cache": answer["metadata"]["cache"],
    }


async def measure(
    storage: StorageKind,
    *,
    turns: int,
    latency: float,
    single_runs: int,
    limit_s: float,
    cached_validation: bool = False,
    profile: bool = False,
) -> dict[str, Any]:
    """One turn alone vs ``turns`` at once, on ``storage``; returns a row of figures.

    ``cached_validation`` runs the experiment of :func:`bench.common.cached_validate_function` (the MCP SDK's
    per-call schema check replaced by a validator cached per schema), to size that cost under load.
    ``profile`` runs the concurrent phase under cProfile (server and client; the wall time is then not a figure).
    """
    model = scripted_model(latency)
    patch = patched_jsonschema_validate(cached_validate_function()) if cached_validation else contextlib.nullcontext()
    with temporary_home() as home, patch:
        app = create_app(bench_settings(home), model=model, stores=stores_for(storage))
        async with serve_on_loopback(app) as base_url, loopback_client(base_url, connections=turns + 8) as client:
            names = {f"bench-c-{i:03d}": SAMPLE_NAMES[i % len(SAMPLE_NAMES)] for i in range(turns)}
            names |= {f"bench-s-{i:03d}": SAMPLE_NAMES[i % len(SAMPLE_NAMES)] for i in range(single_runs)}
            names["bench-warmup"] = SAMPLE_NAMES[0]
            gate = asyncio.Semaphore(UPLOAD_CONCURRENCY)

            async def upload(conversation_id: str, name: str) -> None:
                async with gate:
                    await asyncio.wait_for(upload_http(client, conversation_id, [name]), limit_s)

            await asyncio.gather(*(upload(conversation, name) for conversation, name in names.items()))

            await _bounded_turn(client, "bench-warmup", names["bench-warmup"], limit_s)
            singles = [
                await _bounded_turn(client, f"bench-s-{i:03d}", names[f"bench-s-{i:03d}"], limit_s)
                for i in range(single_runs)
            ]
            one_turn_ms = statistics.median(single["wall_ms"] for single in singles)

            calls_before = model.calls
            profiler = cProfile.Profile() if profile else None
            cpu_started = time.process_time()
            started = time.perf_counter()
            if profiler is not None:
                profiler.enable()
            outcomes = await asyncio.wait_for(
                asyncio.gather(
                    *(
                        _bounded_turn(client, f"bench-c-{i:03d}", names[f"bench-c-{i:03d}"], limit_s)
                        for i in range(turns)
                    ),
                    return_exceptions=True,
                ),
                limit_s,
            )
            if profiler is not None:
                profiler.disable()
            total_ms = (time.perf_counter() - started) * 1000
            cpu_ms = (time.process_time() - cpu_started) * 1000
            calls = model.calls - calls_before

    ok = [outcome for outcome in outcomes if isinstance(outcome, dict)]
    errors = [
        f"{type(outcome).__name__}: {outcome}"[:200] for outcome in outcomes if isinstance(outcome, BaseException)
    ]
    per_turn = summarize([outcome["wall_ms"] for outcome in ok]) if ok else {}
    row: dict[str, Any] = {
        "storage": storage,
        "variant": "cached validation (experiment)" if cached_validation else "product",
        "turns": turns,
        "latency_s": latency,
        "one_turn_ms": round(one_turn_ms, 2),
        "single_runs_ms": [round(single["wall_ms"], 2) for single in singles],
        "total_ms": round(total_ms, 2),
        "ratio": round(total_ms / one_turn_ms, 2),
        "ok": len(ok),
        "errors": len(errors),
        "error_samples": errors[:3],
        "model_calls_total": calls,
        "model_calls_per_turn": sorted({outcome["model_calls"] for outcome in ok}),
        "cache": sorted({str(outcome["cache"]) for outcome in ok}),
        "cpu_ms_total": round(cpu_ms, 1),
        "cpu_ms_per_turn": round(cpu_ms / turns, 2),
        "turn_p50_ms": per_turn.get("p50"),
        "turn_p90_ms": per_turn.get("p90"),
        "turn_max_ms": per_turn.get("max"),
        # If the turns only waited on the model, 100 would take about one turn; this is the floor.
        "model_floor_ms": round(2 * latency * 1000, 1),
    }
    if profiler is not None:
        row["variant"] += ", profiled"
        row["profile"] = profile_summary(profiler, turns)
    return row


async def run(
    turns: int = 100,
    latency: float = 0.1,
    single_runs: int = 5,
    limit_s: float = 120.0,
    storages: tuple[StorageKind, ...] = ("embedded", "memory"),
    experiment: bool = True,
    profile: bool = False,
) -> BenchResult:
    """Run :func:`measure` on each storage; check the ≤ 3× target on embedded storage (the product default).

    With ``experiment``, also run embedded storage with cached schema validation (not the product's behaviour);
    with ``profile``, one more embedded run under cProfile (its figures go to ``details``, not to the checks).
    """
    result = BenchResult(name="concurrency")
    variants: list[tuple[StorageKind, bool]] = [(storage, False) for storage in storages]
    if experiment:
        variants.append(("embedded", True))
    for storage, cached in variants:
        row = await measure(
            storage, turns=turns, latency=latency, single_runs=single_runs, limit_s=limit_s, cached_validation=cached
        )
        result.rows.append(row)
        if storage == "embedded" and not cached:
            result.checks.append(
                Check(f"{turns} concurrent turns / one turn, HTTP loopback, embedded", row["ratio"], RATIO_LIMIT, "×")
            )
            result.checks.append(Check(f"{turns} concurrent turns: failed turns", row["errors"], 0, ""))
    if profile:
        profiled = await measure(
            "embedded", turns=turns, latency=latency, single_runs=1, limit_s=limit_s * 3, profile=True
        )
        result.details["profile"] = profiled.pop("profile")
        result.details["profiled_run"] = profiled
    return result
