"""Target 1: orchestration overhead of a warm ``document_chat`` turn with a zero-latency model.

One conversation with the three sample documents attached; one warm-up turn fills the document_chat file
cache, then the same turn is repeated ``iterations`` times and each repetition must report
``metadata.cache == "hit"``. Every repetition is a follow-up, so it also runs the rewrite call (zero latency).

Measured four ways, each on embedded storage (SQLite file + local folder, the product default) and on memory
stores (to separate the storage cost):

- ``inproc``: ``orchestrator.ask(TurnRequest(...))`` awaited directly;
- ``asgi``: ``POST /api/orc`` through ``httpx.ASGITransport`` (the whole app, no sockets);
- ``http-process``: ``POST /api/orc`` to ``python -m bench.server`` (uvicorn, one worker) on a 127.0.0.1 port,
  in a process of its own; the client stays in the bench process. This is the loopback HTTP figure;
- ``http-same-loop``: the same, but uvicorn runs as a task of the bench's own event loop, so the client's CPU
  (httpx/httpcore) is counted in the turn too. Kept for comparison with earlier figures.

Where the time goes: :func:`breakdown` times the parts of a turn without a profiler (round-robin, so load from
other processes hits them alike), and :func:`profile_inproc` runs warm in-process turns under cProfile and
counts the calls that earlier versions paid per turn (``jsonschema`` validation, MCP session set-up).
"""

from __future__ import annotations

import contextlib
import cProfile
import gc
import pstats
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from bench.common import (
    SAMPLE_DOCS,
    SAMPLE_NAMES,
    STORAGE_KINDS,
    BenchResult,
    Check,
    ServerOptions,
    StorageKind,
    asgi_client,
    attach_samples,
    bench_settings,
    loopback_client,
    open_services,
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
from orc.composition import build_document_services, build_foundation, build_runtime, in_memory_mcp
from orc.documents.intake.uploads import Upload
from orc.http import create_app
from orc.mcp_client import McpToolbox, ToolOutcome
from orc.principal import LOCAL_PRINCIPAL
from orc.turns import Orchestrator, TurnRequest

CONVERSATION = "bench-overhead"
QUESTION = "What is the monthly rent?"
WARMUP_TURNS = 3  # the first fills the file cache (miss); the others warm code paths on hits

INPROC_LIMIT_MS = 10.0
HTTP_LIMIT_MS = 25.0

TurnFn = Callable[[], Awaitable[str | None]]
"""Runs one turn and returns its ``metadata.cache`` outcome."""


@dataclass
class Timing:
    """The samples of one timed loop."""

    samples_ms: list[float]
    cpu_ms_per_turn: float
    hits: int
    warmup: list[str | None]
    server_cpu_ms_per_turn: float | None = None


async def _time_turns(turn: TurnFn, iterations: int, server_pid: int | None = None) -> Timing:
    """Warm up, then time ``iterations`` turns one after the other (wall time each, process CPU time overall).

    With ``server_pid``, the CPU time of that server process (and its children) is read as well.
    """
    warmup = [await turn() for _ in range(WARMUP_TURNS)]
    gc.collect()
    samples: list[float] = []
    hits = 0
    server_started = process_tree_cpu_seconds(server_pid) if server_pid else 0.0
    cpu_started = time.process_time()
    for _ in range(iterations):
        started = time.perf_counter()
        cache = await turn()
        samples.append((time.perf_counter() - started) * 1000)
        hits += cache == "hit"
    cpu_ms = (time.process_time() - cpu_started) * 1000 / iterations
    server_ms = (process_tree_cpu_seconds(server_pid) - server_started) * 1000 / iterations if server_pid else None
    return Timing(samples, cpu_ms, hits, warmup, server_ms)


def _row(mode: str, storage: StorageKind, timing: Timing) -> dict[str, Any]:
    samples = timing.samples_ms
    tenth = max(1, len(samples) // 10)
    in_process = timing.server_cpu_ms_per_turn is None
    return {
        "mode": mode,
        "storage": storage,
        **summarize(samples),
        # The server's CPU per turn: the bench process when it serves, else the server process (10 ms ticks).
        "cpu_ms": round(timing.cpu_ms_per_turn if in_process else timing.server_cpu_ms_per_turn or 0.0, 3),
        "client_cpu_ms": None if in_process else round(timing.cpu_ms_per_turn, 3),
        "cache_hits": f"{timing.hits}/{len(samples)}",
        "cache_misses": len(samples) - timing.hits,
        "warmup_cache": timing.warmup,
        # Drift check: the conversation grows by one turn per iteration.
        "p50_first_10pct": summarize(samples[:tenth])["p50"],
        "p50_last_10pct": summarize(samples[-tenth:])["p50"],
    }


def _inproc_turn(orchestrator: Orchestrator) -> TurnFn:
    request = TurnRequest(question=QUESTION, conversation_id=CONVERSATION, blob_names=SAMPLE_NAMES)

    async def turn() -> str | None:
        result = await orchestrator.ask(request)
        return result.metadata.cache

    return turn


def _http_turn(client: httpx.AsyncClient) -> TurnFn:
    body = turn_body(CONVERSATION, SAMPLE_NAMES, QUESTION)

    async def turn() -> str | None:
        result = await post_turn(client, body)
        cache: str | None = result["metadata"]["cache"]
        return cache

    return turn


async def measure_inproc(storage: StorageKind, iterations: int) -> dict[str, Any]:
    """``orchestrator.ask`` repeated on one warm conversation."""
    with temporary_home() as home:
        async with open_services(storage, scripted_model(), home) as services:
            orchestrator = services.orchestrator
            await attach_samples(services, CONVERSATION)
            timing = await _time_turns(_inproc_turn(orchestrator), iterations)
    return _row("inproc", storage, timing)


async def measure_asgi(storage: StorageKind, iterations: int) -> dict[str, Any]:
    """``POST /api/orc`` through ``httpx.ASGITransport``."""
    with temporary_home() as home:
        app = create_app(bench_settings(home), model=scripted_model(), stores=stores_for(storage))
        async with asgi_client(app) as client:
            await upload_http(client, CONVERSATION, SAMPLE_NAMES)
            timing = await _time_turns(_http_turn(client), iterations)
    return _row("asgi", storage, timing)


async def measure_http_same_loop(storage: StorageKind, iterations: int) -> dict[str, Any]:
    """``POST /api/orc`` to uvicorn on loopback, server task and client in this event loop (comparison)."""
    with temporary_home() as home:
        app = create_app(bench_settings(home), model=scripted_model(), stores=stores_for(storage))
        async with serve_on_loopback(app) as base_url, loopback_client(base_url, connections=1) as client:
            await upload_http(client, CONVERSATION, SAMPLE_NAMES)
            timing = await _time_turns(_http_turn(client), iterations)
    return _row("http-same-loop", storage, timing)


async def measure_http_process(storage: StorageKind, iterations: int) -> dict[str, Any]:
    """``POST /api/orc`` to a ``bench.server`` process on loopback; the client stays in this process."""
    with temporary_home() as home:
        async with (
            serve_in_subprocess(home, ServerOptions(storage=storage)) as server,
            loopback_client(server.base_url, connections=1) as client,
        ):
            await upload_http(client, CONVERSATION, SAMPLE_NAMES)
            timing = await _time_turns(_http_turn(client), iterations, server_pid=server.pid)
    return _row("http-process", storage, timing)


# Calls that earlier versions of the product made on every turn; the profile counts them (0 = gone).
FORMER_COSTS: dict[str, tuple[str, str]] = {
    "jsonschema.validate": ("jsonschema/validators.py", "validate"),
    "jsonschema check_schema": ("jsonschema/validators.py", "check_schema"),
    "MCP ClientSession.initialize": ("client/session.py", "initialize"),
    "MCP create_connected_server_and_client_session": (
        "shared/memory.py",
        "create_connected_server_and_client_session",
    ),
    "MCP ClientSession.list_tools": ("client/session.py", "list_tools"),
    "MCP ClientSession.call_tool": ("client/session.py", "call_tool"),
    "MCP ClientSession.send_request": ("shared/session.py", "send_request"),
}


def count_calls(stats: pstats.Stats, iterations: int) -> dict[str, float]:
    """Calls per turn of each of :data:`FORMER_COSTS` in a profile (coroutines count each resumption)."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    counts = dict.fromkeys(FORMER_COSTS, 0.0)
    for (filename, _line, name), (_cc, ncalls, *_rest) in raw.items():
        for label, (suffix, function) in FORMER_COSTS.items():
            if name == function and filename.replace("\\", "/").endswith(suffix):
                counts[label] += ncalls / iterations
    return {label: round(value, 2) for label, value in counts.items()}


async def profile_inproc(iterations: int, top: int = 25) -> dict[str, Any]:
    """cProfile ``iterations`` warm in-process turns on embedded storage: top functions and self time by package.

    cProfile only sees the event-loop thread; time the loop spends waiting (e.g. for aiosqlite's worker
    thread) shows up under ``select``/``epoll``. ``former_costs_calls_per_turn`` counts the jsonschema and MCP
    session calls that earlier versions made per turn.
    """
    with temporary_home() as home:
        async with open_services("embedded", scripted_model(), home) as services:
            orchestrator = services.orchestrator
            await attach_samples(services, CONVERSATION)
            turn = _inproc_turn(orchestrator)
            for _ in range(WARMUP_TURNS):
                await turn()
            gc.collect()
            profiler = cProfile.Profile()
            started = time.perf_counter()
            profiler.enable()
            for _ in range(iterations):
                await turn()
            profiler.disable()
            wall_ms = (time.perf_counter() - started) * 1000

    stats = pstats.Stats(profiler)
    return {
        "iterations": iterations,
        "profiled_wall_ms_per_turn": round(wall_ms / iterations, 3),
        "former_costs_calls_per_turn": count_calls(stats, iterations),
        **profile_summary(stats, iterations, top),
    }


# -- where the time goes, without a profiler ---------------------------------------------------------------


async def breakdown(iterations: int) -> dict[str, Any]:
    """Time a warm in-process turn and its parts without a profiler (p50 ms over ``iterations`` rounds).

    The parts are measured round-robin — one sample of each per round — so that load from other processes
    hits them alike and their differences stay meaningful:

    - ``turn``: the whole warm ``orchestrator.ask`` on embedded storage (as in the main table);
    - ``turn_memory_stores``: the same on memory stores (the difference is the storage cost);
    - ``turn_no_tools``: a follow-up without ``blob_names`` on a conversation without documents (so no tool is
      offered: rewrite + answer, 2 model calls): the graph, history and persistence without the tool;
    - ``mcp_document_chat_call``: what the executor does: ``McpToolbox.call("document_chat", …)`` with
      ``cached_file_info`` over the process's one in-memory MCP session (opened once, before timing);
    - ``document_chat_service``: the tool's service called directly (no MCP), on a cache hit, with its
      zero-latency model call.
    """
    model = scripted_model()
    with temporary_home() as home, temporary_home() as memory_home, temporary_home() as service_home:
        async with (
            build_runtime(bench_settings(home), model=model) as runtime,
            open_services("memory", scripted_model(), memory_home) as memory_services,
            contextlib.AsyncExitStack() as stack,
        ):
            foundation = await build_foundation(bench_settings(service_home), stack)
            documents = await build_document_services(
                bench_settings(service_home), stack, foundation, model=scripted_model()
            )
            await foundation.session_files.add(
                LOCAL_PRINCIPAL, CONVERSATION, [Upload(n, SAMPLE_DOCS[n]) for n in SAMPLE_NAMES]
            )
            service = documents.mcp.document_chat
            first = await service.answer(LOCAL_PRINCIPAL, CONVERSATION, QUESTION, SAMPLE_NAMES)
            service_files = first.files

            async def service_call() -> None:
                result = await service.answer(LOCAL_PRINCIPAL, CONVERSATION, QUESTION, SAMPLE_NAMES, service_files)
                if result.metadata.cache != "hit":
                    raise RuntimeError("the direct document_chat call missed its cache")

            orchestrator = runtime.orchestrator
            memory_orchestrator = memory_services.orchestrator
            await attach_samples(runtime, CONVERSATION)
            await attach_samples(memory_services, CONVERSATION)
            turn = _inproc_turn(orchestrator)
            memory_turn = _inproc_turn(memory_orchestrator)
            no_tools_request = TurnRequest(question=QUESTION, conversation_id="bench-no-tools")

            async def no_tools_turn() -> None:
                result = await orchestrator.ask(no_tools_request)
                if result.metadata.tool_calls:
                    raise RuntimeError("a turn without blob_names called a tool")

            for _ in range(WARMUP_TURNS):
                await turn()
                await memory_turn()
                await no_tools_turn()
            history = await runtime.foundation.conversations.turns(LOCAL_PRINCIPAL, CONVERSATION)
            refs = [ref.model_dump() for ref in history[-1].assistant.uploaded_file_refs]
            connection = in_memory_mcp(runtime.documents.server)
            stack.push_async_callback(connection.aclose)
            toolbox = McpToolbox(
                connection, principal=LOCAL_PRINCIPAL, scope={"session_id": CONVERSATION, "include_historical": True}
            )
            arguments = {"question": QUESTION, "document_names": SAMPLE_NAMES, "cached_file_info": refs}

            async def document_chat_call() -> ToolOutcome:
                outcome = await toolbox.call("document_chat", arguments)
                if outcome.is_error or outcome.structured is None:
                    raise RuntimeError(f"document_chat failed: {outcome.text[:300]}")
                return outcome

            parts: dict[str, Callable[[], Awaitable[Any]]] = {
                "turn": turn,
                "turn_memory_stores": memory_turn,
                "turn_no_tools": no_tools_turn,
                "mcp_document_chat_call": document_chat_call,
                "document_chat_service": service_call,
            }
            for action in parts.values():
                await action()
            gc.collect()
            samples: dict[str, list[float]] = {name: [] for name in parts}
            for _ in range(iterations):
                for name, action in parts.items():
                    started = time.perf_counter()
                    await action()
                    samples[name].append((time.perf_counter() - started) * 1000)

    results: dict[str, Any] = {f"{name}_p50_ms": summarize(values)["p50"] for name, values in samples.items()}
    results["iterations"] = iterations
    results["storage_ms_per_turn"] = round(results["turn_p50_ms"] - results["turn_memory_stores_p50_ms"], 3)
    results["mcp_transport_ms_per_call"] = round(
        results["mcp_document_chat_call_p50_ms"] - results["document_chat_service_p50_ms"], 3
    )
    results["tool_part_ms_per_turn"] = round(results["turn_p50_ms"] - results["turn_no_tools_p50_ms"], 3)
    return results


async def run(
    iterations: int = 100, http_iterations: int = 50, profile_iterations: int = 30, breakdown_iterations: int = 30
) -> BenchResult:
    """Measure every mode on both storages; check the 10 ms (in-process) and 25 ms (loopback HTTP) targets."""
    result = BenchResult(name="turn_overhead")
    for storage in STORAGE_KINDS:
        result.rows.append(await measure_inproc(storage, iterations))
        result.rows.append(await measure_asgi(storage, http_iterations))
        result.rows.append(await measure_http_process(storage, http_iterations))
        result.rows.append(await measure_http_same_loop(storage, http_iterations))

    for row in result.rows:
        if row["storage"] != "embedded" or row["mode"] not in ("inproc", "http-process"):
            continue
        limit = INPROC_LIMIT_MS if row["mode"] == "inproc" else HTTP_LIMIT_MS
        where = "in-process" if row["mode"] == "inproc" else "HTTP loopback (server process)"
        # The target is the median; p90 and p99 are in the table.
        result.checks.append(Check(f"warm turn {where}, embedded, p50", row["p50"], limit))
    misses = sum(row["cache_misses"] for row in result.rows)
    result.checks.append(Check("timed turns that missed the document_chat cache", misses, 0, "turns"))
    if breakdown_iterations > 0:
        result.details["breakdown"] = await breakdown(breakdown_iterations)
    if profile_iterations > 0:
        result.details["profile"] = await profile_inproc(profile_iterations)
    return result
