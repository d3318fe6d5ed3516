"""Target 1: orchestration overhead of a warm ``document_chat`` turn with a zero-latency model.

One conversation with the three sample documents attached; one warm-up turn fills the document_chat file
cache, then the same turn is repeated ``iterations`` times and each repetition must report
``metadata.cache == "hit"``. Every repetition is a follow-up, so it also runs the rewrite call (zero latency).

Measured three ways, each on embedded storage (SQLite file + local folder, the product default) and on memory
stores (to separate the storage cost):

- ``inproc``: ``orchestrator.ask(TurnRequest(...))`` awaited directly;
- ``asgi``: ``POST /api/orc`` through ``httpx.ASGITransport`` (the whole app, no sockets);
- ``http``: ``POST /api/orc`` to uvicorn on a 127.0.0.1 port, served by a task of the same event loop
  (so the client's cost is included too — client and server share one core's event loop).

Where the time goes: :func:`breakdown` times the parts of a turn without a profiler (round-robin, so load from
other processes hits them alike), and :func:`profile_inproc` runs warm in-process turns under cProfile, once
as the product is and once with the MCP SDK's schema validation cached (an experiment patched in this process
only; the product code is untouched).
"""

from __future__ import annotations

import contextlib
import cProfile
import gc
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import jsonschema
from referencing import Registry

from bench.common import (
    SAMPLE_DOCS,
    SAMPLE_NAMES,
    STORAGE_KINDS,
    BenchResult,
    Check,
    StorageKind,
    asgi_client,
    attach_samples,
    bench_settings,
    cached_validate_function,
    loopback_client,
    open_orchestrator,
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
from orc.composition import build_document_services, build_runtime, in_memory_mcp
from orc.http import create_app
from orc.mcp_client import McpToolbox, ToolOutcome
from orc.orchestrator import Orchestrator
from orc.principal import LOCAL_PRINCIPAL
from orc.session_files import Upload
from orc.turns import TurnRequest

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


async def _time_turns(turn: TurnFn, iterations: int) -> Timing:
    """Warm up, then time ``iterations`` turns one after the other (wall time each, process CPU time overall)."""
    warmup = [await turn() for _ in range(WARMUP_TURNS)]
    gc.collect()
    samples: list[float] = []
    hits = 0
    cpu_started = time.process_time()
    for _ in range(iterations):
        started = time.perf_counter()
        cache = await turn()
        samples.append((time.perf_counter() - started) * 1000)
        hits += cache == "hit"
    cpu_ms = (time.process_time() - cpu_started) * 1000 / iterations
    return Timing(samples, cpu_ms, hits, warmup)


def _row(mode: str, storage: StorageKind, timing: Timing) -> dict[str, Any]:
    samples = timing.samples_ms
    tenth = max(1, len(samples) // 10)
    return {
        "mode": mode,
        "storage": storage,
        **summarize(samples),
        "cpu_ms": round(timing.cpu_ms_per_turn, 3),
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
        async with open_orchestrator(storage, scripted_model(), home) as orchestrator:
            await attach_samples(orchestrator, CONVERSATION)
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


async def measure_http(storage: StorageKind, iterations: int) -> dict[str, Any]:
    """``POST /api/orc`` to uvicorn on loopback (server task and client in this event loop)."""
    with temporary_home() as home:
        app = create_app(bench_settings(home), model=scripted_model(), stores=stores_for(storage))
        async with serve_on_loopback(app) as base_url, loopback_client(base_url, connections=1) as client:
            await upload_http(client, CONVERSATION, SAMPLE_NAMES)
            timing = await _time_turns(_http_turn(client), iterations)
    return _row("http", storage, timing)


async def profile_inproc(iterations: int, top: int = 25, *, cached_validation: bool = False) -> dict[str, Any]:
    """cProfile ``iterations`` warm in-process turns on embedded storage: top functions and self time by package.

    cProfile only sees the event-loop thread; time the loop spends waiting (e.g. for aiosqlite's worker
    thread) shows up under ``select``/``epoll``. ``cached_validation`` runs the experiment of
    :func:`cached_validate_function`, to see what comes after the MCP SDK's schema validation.
    """
    patch = patched_jsonschema_validate(cached_validate_function()) if cached_validation else contextlib.nullcontext()
    with temporary_home() as home, patch:
        async with open_orchestrator("embedded", scripted_model(), home) as orchestrator:
            await attach_samples(orchestrator, CONVERSATION)
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

    return {
        "iterations": iterations,
        "cached_validation_experiment": cached_validation,
        "profiled_wall_ms_per_turn": round(wall_ms / iterations, 3),
        **profile_summary(profiler, iterations, top),
    }


# -- where the time goes, without a profiler ---------------------------------------------------------------


async def breakdown(iterations: int) -> dict[str, Any]:
    """Time a warm in-process turn and its parts without a profiler (p50 ms over ``iterations`` rounds).

    The parts are measured round-robin — one sample of each per round — so that load from other processes
    hits them alike and their differences stay meaningful:

    - ``turn``: the whole warm ``orchestrator.ask`` on embedded storage (as in the main table);
    - ``turn_memory_stores``: the same on memory stores (the difference is the storage cost);
    - ``turn_no_tools``: a follow-up without ``blob_names`` (rewrite + answer, no MCP session): the graph,
      history and persistence without the tool;
    - ``turn_cached_validation``: the embedded turn with ``jsonschema.validate`` swapped for a validator cached
      per schema (experiment; see :func:`cached_validate_function`);
    - ``mcp_session_open_close``: one in-memory MCP client session opened (initialize handshake) and closed,
      as every turn with a tool does;
    - ``mcp_document_chat_call``: what the executor does: open a session, call ``document_chat`` with
      ``cached_file_info`` (the tool, its zero-latency model call, list_tools, schema validation), close;
    - ``document_chat_service``: the tool's service called directly (no MCP), on a cache hit, with its
      zero-latency model call;
    - ``jsonschema_validate``: one ``jsonschema.validate(structured, outputSchema)`` the way the MCP SDK calls it,
      ``jsonschema_calls_per_turn`` times per turn (counted), and ``cached_validator`` the same check with a
      prebuilt validator.
    """
    model = scripted_model()
    with temporary_home() as home, temporary_home() as memory_home, temporary_home() as service_home:
        async with (
            build_runtime(bench_settings(home), model=model) as runtime,
            open_orchestrator("memory", scripted_model(), memory_home) as memory_orchestrator,
            contextlib.AsyncExitStack() as stack,
        ):
            services = await build_document_services(bench_settings(service_home), stack, model=scripted_model())
            await services.files.add(LOCAL_PRINCIPAL, CONVERSATION, [Upload(n, SAMPLE_DOCS[n]) for n in SAMPLE_NAMES])
            service = services.mcp.document_chat
            first = await service.answer(LOCAL_PRINCIPAL, CONVERSATION, QUESTION, SAMPLE_NAMES)
            service_files = first.files

            async def service_call() -> None:
                result = await service.answer(LOCAL_PRINCIPAL, CONVERSATION, QUESTION, SAMPLE_NAMES, service_files)
                if result.metadata.cache != "hit":
                    raise RuntimeError("the direct document_chat call missed its cache")

            orchestrator = runtime.orchestrator
            await attach_samples(orchestrator, CONVERSATION)
            await attach_samples(memory_orchestrator, CONVERSATION)
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
            history = await orchestrator.conversations.turns(LOCAL_PRINCIPAL, CONVERSATION)
            refs = [ref.model_dump() for ref in history[-1].assistant.uploaded_file_refs]
            connect = in_memory_mcp(runtime.mcp_server)(LOCAL_PRINCIPAL)
            arguments = {"question": QUESTION, "document_names": SAMPLE_NAMES, "cached_file_info": refs}

            async def session_only() -> None:
                async with connect():
                    pass

            async def document_chat_call() -> ToolOutcome:
                toolbox = McpToolbox(connect, scope={"session_id": CONVERSATION})
                try:
                    return await toolbox.call("document_chat", arguments)
                finally:
                    await toolbox.aclose()

            outcome = await document_chat_call()
            if outcome.is_error or outcome.structured is None:
                raise RuntimeError(f"document_chat failed: {outcome.text[:300]}")
            structured = outcome.structured
            tool = next(t for t in await runtime.mcp_server.list_tools() if t.name == "document_chat")
            output_schema = tool.outputSchema

            counted = [0]
            original_validate = jsonschema.validate

            def counting_validate(*args: Any, **kwargs: Any) -> None:
                counted[0] += 1
                original_validate(*args, **kwargs)

            with patched_jsonschema_validate(counting_validate):
                await turn()

            cached = cached_validate_function()

            async def cached_turn() -> None:
                with patched_jsonschema_validate(cached):
                    await turn()

            async def validate_once() -> None:
                jsonschema.validate(structured, output_schema, registry=Registry())

            async def cached_once() -> None:
                cached(structured, output_schema)

            parts: dict[str, Callable[[], Awaitable[Any]]] = {
                "turn": turn,
                "turn_memory_stores": memory_turn,
                "turn_no_tools": no_tools_turn,
                "turn_cached_validation": cached_turn,
                "mcp_session_open_close": session_only,
                "mcp_document_chat_call": document_chat_call,
                "document_chat_service": service_call,
                "jsonschema_validate": validate_once,
                "cached_validator": cached_once,
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
    results["jsonschema_calls_per_turn"] = counted[0]
    validation_ms = counted[0] * results["jsonschema_validate_p50_ms"]
    results["jsonschema_ms_per_turn"] = round(validation_ms, 3)
    results["jsonschema_share_of_turn"] = round(validation_ms / results["turn_p50_ms"], 3)
    results["storage_ms_per_turn"] = round(results["turn_p50_ms"] - results["turn_memory_stores_p50_ms"], 3)
    results["mcp_transport_ms_per_turn"] = round(
        results["mcp_document_chat_call_p50_ms"] - results["document_chat_service_p50_ms"] - validation_ms, 3
    )
    return results


async def run(
    iterations: int = 100, http_iterations: int = 50, profile_iterations: int = 30, breakdown_iterations: int = 30
) -> BenchResult:
    """Measure every mode on both storages; check the 10 ms (in-process) and 25 ms (loopback HTTP) targets."""
    result = BenchResult(name="turn_overhead")
    for storage in STORAGE_KINDS:
        result.rows.append(await measure_inproc(storage, iterations))
        result.rows.append(await measure_asgi(storage, http_iterations))
        result.rows.append(await measure_http(storage, http_iterations))

    for row in result.rows:
        if row["storage"] != "embedded" or row["mode"] == "asgi":
            continue
        limit = INPROC_LIMIT_MS if row["mode"] == "inproc" else HTTP_LIMIT_MS
        where = "in-process" if row["mode"] == "inproc" else "HTTP loopback"
        for stat in ("p50", "p90", "p99"):
            result.checks.append(Check(f"warm turn {where}, embedded, {stat}", row[stat], limit))
    misses = sum(row["cache_misses"] for row in result.rows)
    result.checks.append(Check("timed turns that missed the document_chat cache", misses, 0, "turns"))
    if breakdown_iterations > 0:
        result.details["breakdown"] = await breakdown(breakdown_iterations)
    if profile_iterations > 0:
        result.details["profile"] = await profile_inproc(profile_iterations)
        result.details["profile_cached_validation"] = await profile_inproc(profile_iterations, cached_validation=True)
    return result
