"""Side by side: orc against the build a LangGraph user would write for the same job, in one run, interleaved.

The peer (:mod:`bench.peer_app`) is ``langchain.agents.create_agent`` (LangGraph 1.x's home of
``create_react_agent``) with ``langchain-mcp-adapters`` tools over a FastMCP ``document_chat(question,
blob_names)`` server (:mod:`bench.peer_mcp`, orc's own extraction, spans and BM25 over the same documents), an
``AsyncSqliteSaver`` checkpointer and FastAPI/uvicorn, in two variants: ``per-call`` (``MultiServerMCPClient``'s
default, a new MCP session per tool call) and ``session`` (one session for every turn, ``load_mcp_tools``). orc is
its HTTP app as ``orc serve`` runs it. Both get :func:`bench.peer_model.bench_model`, the same scripted model with
the same latency per call; ``floor`` is a FastAPI endpoint returning a fixed JSON answer. Every server is a process
of its own on 127.0.0.1 (:mod:`bench.peer_server`); the load generator (aiohttp) is the bench process.

For each model latency (0 and 0.5 s per call):

1. every conversation orc will use gets the three sample documents uploaded, and their digests waited for (not
   timed); the peer's MCP server reads the same three files from its folder;
2. warm-up: a first turn, a follow-up and a streamed turn on each build;
3. ``rounds`` rounds, each of four steps (a first turn with the three files attached and a follow-up on the same
   conversation, as JSON; the same two on another conversation, streamed as NDJSON): each step is taken by every
   build in turn, the order rotating each round, so that the host's speed swings hit all builds alike. A streamed
   turn gives the time to the first ``token`` event and to the end of the stream;
4. at the largest latency only, ``bursts`` bursts of ``turns`` first turns at once per build, each turn on a
   conversation of its own, the builds taking turns in a rotating order (as the rounds of step 3): a build's
   figure is its median burst time, and burst time / the median single first turn of step 3. One burst each
   would compare two samples of a host whose speed swings by a third between runs. (At 0 ms every build's burst
   is bound by its CPU alone, and took the peer 20-30 s a variant.)

Then, in-process with a zero-latency model, one conversation of ``conversation_turns`` turns on each build (the
peer's ``session`` variant; both variants send the model the same requests), turn by turn in alternation: the
model calls per turn and the input tokens per turn (all of its model calls), counted as characters / 4 for both.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
from langchain_core.runnables import RunnableConfig

from bench.common import (
    REQUEST_TIMEOUT,
    SAMPLE_DOCS,
    SAMPLE_NAMES,
    BenchResult,
    Check,
    attach_samples,
    loopback_client,
    open_services,
    temporary_home,
    upload_http,
)
from bench.peer_app import peer_agent
from bench.peer_model import InputMeter, metered_model, user_message
from bench.peer_server import RunningServer, ServerSpec, serve_all
from orc.turns import TurnRequest

ORC = "orc"
PER_CALL = "peer/per-call"
SESSION = "peer/session"
FLOOR = "floor"
BUILDS = (ORC, PER_CALL, SESSION)
PATHS = {ORC: "/api/orc", PER_CALL: "/chat", SESSION: "/chat", FLOOR: "/chat"}
QUESTIONS = (
    "What is the monthly rent?",
    "And how much notice must be given?",
    "How many vacation days do new employees get?",
    "How long does the warranty last?",
    "Is water damage covered?",
    "Can the tenant keep a pet?",
    "When must expenses be filed?",
    "How many days of remote work are allowed?",
    "What is the rated battery life?",
    "When is the rent payable?",
)
TOKEN_TURNS = (3, 10, 20, 50)
UPLOAD_CONCURRENCY = 8

# The targets of issues 11 and 25 (bench/README.md): orc's figures over the peer's, from the same run.
FOLLOW_UP_RATIO_LIMIT = 0.55
BURST_RATIO_LIMIT = 0.5
BURST_TARGET_LATENCY = 0.1
"""Issue 25: at 100 ms per model call (``--peer-latency 0.1``), a burst of first turns on one orc worker takes at
most half the faster peer's wall time."""
TTFT_MARGIN_MS = 30.0
TOKENS_RATIO_LIMIT = 0.5
TOKENS_FLAT_LIMIT = 1.10


def _body(conversation_id: str, question: str) -> dict[str, Any]:
    return {"question": question, "conversation_id": conversation_id, "blob_names": SAMPLE_NAMES}


async def _post(session: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """One JSON turn: wall ms and model calls."""
    started = time.perf_counter()
    async with session.post(path, json=body) as response:
        if response.status != 200:
            raise RuntimeError(f"{path} answered {response.status}: {(await response.text())[:300]}")
        answer = await response.json()
    return {"ms": (time.perf_counter() - started) * 1000, "calls": answer.get("metadata", {}).get("model_calls")}


async def _stream(session: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """One streamed turn: ms to the first ``token`` event and to the end, and the model calls of ``final``."""
    started = time.perf_counter()
    first: float | None = None
    calls = None
    async with session.post(path, json=body, headers={"Accept": "application/x-ndjson"}) as response:
        if response.status != 200:
            raise RuntimeError(f"{path} answered {response.status}: {(await response.text())[:300]}")
        async for line in response.content:
            if not line.strip():
                continue
            event = json.loads(line)
            if event["type"] == "token" and first is None:
                first = time.perf_counter()
            elif event["type"] == "final":
                calls = event.get("metadata", {}).get("model_calls")
            elif event["type"] == "error":
                raise RuntimeError(f"{path} streamed an error: {event}")
    ended = time.perf_counter()
    if first is None:
        raise RuntimeError(f"{path} streamed no token")
    return {"ms": (ended - started) * 1000, "ttft_ms": (first - started) * 1000, "calls": calls}


def _median(samples: Sequence[float]) -> float:
    return round(statistics.median(samples), 2) if samples else float("nan")


@contextlib.asynccontextmanager
async def _sessions(servers: dict[str, RunningServer], connections: int) -> AsyncIterator[dict[str, Any]]:
    async with contextlib.AsyncExitStack() as stack:
        sessions = {
            label: await stack.enter_async_context(
                aiohttp.ClientSession(
                    base_url=server.base_url,
                    connector=aiohttp.TCPConnector(limit=connections),
                    timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT),
                )
            )
            for label, server in servers.items()
        }
        yield sessions


async def _upload_all(base_url: str, conversations: Sequence[str], limit_s: float) -> None:
    """The three sample documents into each of orc's conversations, digests waited for (set-up, not timed)."""
    gate = asyncio.Semaphore(UPLOAD_CONCURRENCY)
    async with loopback_client(base_url, connections=UPLOAD_CONCURRENCY) as client:

        async def upload(conversation_id: str) -> None:
            async with gate:
                await asyncio.wait_for(upload_http(client, conversation_id, SAMPLE_NAMES), limit_s)

        await asyncio.gather(*(upload(conversation) for conversation in conversations))


async def _measure_latency(
    servers: dict[str, RunningServer], latency: float, *, rounds: int, turns: int, bursts: int, limit_s: float
) -> dict[str, Any]:
    """Steps 1-4 of the module docstring on the servers of one model latency."""
    warm = ["warm-json", "warm-stream"]
    timed = [f"{kind}-{r}" for r in range(rounds) for kind in ("json", "stream")]
    # turns=0: no burst. Each burst has conversations of its own: every turn of it is a first turn.
    burst_conversations = [[f"burst-{b}-{j:03d}" for j in range(turns)] for b in range(bursts if turns else 0)]
    started = time.perf_counter()
    await _upload_all(servers[ORC].base_url, [*warm, *timed, *(c for cs in burst_conversations for c in cs)], limit_s)
    upload_s = round(time.perf_counter() - started, 1)

    samples: dict[tuple[str, str], list[float]] = {}
    calls: dict[tuple[str, str], set[Any]] = {}
    async with _sessions(servers, turns + 8) as sessions:

        async def step(build: str, kind: str, conversation: str, question: str) -> None:
            path, body = PATHS[build], _body(conversation, question)
            if kind.startswith("stream"):
                outcome = await asyncio.wait_for(_stream(sessions[build], path, body), limit_s)
                samples.setdefault((build, f"ttft {kind}"), []).append(outcome["ttft_ms"])
            else:
                outcome = await asyncio.wait_for(_post(sessions[build], path, body), limit_s)
            samples.setdefault((build, kind), []).append(outcome["ms"])
            calls.setdefault((build, kind), set()).add(outcome["calls"])

        steps = [
            ("first", "json", QUESTIONS[0]),
            ("follow-up", "json", QUESTIONS[1]),
            ("stream first", "stream", QUESTIONS[0]),
            ("stream follow-up", "stream", QUESTIONS[1]),
        ]
        for build in BUILDS:  # warm-up: imports, first-use caches, connections
            for kind, conversation, question in steps:
                await step(build, kind, f"warm-{conversation}", question)
        await _post(sessions[FLOOR], PATHS[FLOOR], _body("warm", QUESTIONS[0]))
        for r in range(rounds):
            order = [*BUILDS, FLOOR][r % 4 :] + [*BUILDS, FLOOR][: r % 4]
            for kind, conversation, question in steps:
                for build in order:
                    if build == FLOOR:
                        if not kind.startswith("stream"):
                            floor = await _post(sessions[FLOOR], PATHS[FLOOR], _body(f"{conversation}-{r}", question))
                            samples.setdefault((FLOOR, kind), []).append(floor["ms"])
                        continue
                    await step(build, kind, f"{conversation}-{r}", question)

        totals: dict[str, list[float]] = {}
        failures: dict[str, list[str]] = {}
        for b, conversations in enumerate(burst_conversations):
            builds = [*BUILDS, FLOOR]
            for build in builds[b % len(builds) :] + builds[: b % len(builds)]:
                path = PATHS[build]
                started = time.perf_counter()
                outcomes = await asyncio.wait_for(
                    asyncio.gather(
                        *(_post(sessions[build], path, _body(c, QUESTIONS[0])) for c in conversations),
                        return_exceptions=True,
                    ),
                    limit_s,
                )
                totals.setdefault(build, []).append(round((time.perf_counter() - started) * 1000, 1))
                failed = failures.setdefault(build, [])
                failed.extend(repr(o)[:200] for o in outcomes if isinstance(o, BaseException))
        bursts: dict[str, dict[str, Any]] = {}
        for build, times in totals.items():
            total_ms = statistics.median(times)
            one = statistics.median(samples[(build, "first")])
            bursts[build] = {
                "total_ms": round(total_ms, 1),
                "samples_ms": times,
                "one_turn_ms": round(one, 2),
                "ratio": round(total_ms / one, 2),
                "errors": len(failures[build]),
                "failures": failures[build][:3],
            }
    return {
        "medians": {f"{build} {kind}": _median(values) for (build, kind), values in samples.items()},
        "samples": {f"{build} {kind}": [round(v, 2) for v in values] for (build, kind), values in samples.items()},
        "calls": {
            f"{build} {kind}": sorted(c for c in values if c is not None) for (build, kind), values in calls.items()
        },
        "bursts": bursts,
        "upload_s": upload_s,
    }


async def _conversation(mcp_url: str, turns: int, folder: Path) -> dict[str, list[dict[str, int]]]:
    """One ``turns``-turn conversation per build, turn by turn in alternation, zero-latency model: model calls and
    input tokens of each turn."""
    orc_meter, peer_meter = InputMeter(), InputMeter()
    per_turn: dict[str, list[dict[str, int]]] = {ORC: [], "peer": []}
    with temporary_home() as home:
        async with (
            open_services("embedded", metered_model(orc_meter), home) as services,
            peer_agent(metered_model(peer_meter), mcp_url, "session", folder / "conversation.sqlite") as agent,
        ):
            orchestrator = services.orchestrator
            await attach_samples(services, "tokens")
            config: RunnableConfig = {"configurable": {"thread_id": "tokens"}}
            for turn in range(turns):
                question = QUESTIONS[turn % len(QUESTIONS)]
                before = orc_meter.count
                await orchestrator.ask(
                    TurnRequest(question=question, conversation_id="tokens", blob_names=SAMPLE_NAMES)
                )
                orc_calls, orc_tokens = orc_meter.since(before)
                per_turn[ORC].append({"model_calls": orc_calls, "input_tokens": orc_tokens})
                before = peer_meter.count
                await agent.ainvoke({"messages": [("user", user_message(question, SAMPLE_NAMES))]}, config)
                peer_calls, peer_tokens = peer_meter.since(before)
                per_turn["peer"].append({"model_calls": peer_calls, "input_tokens": peer_tokens})
    return per_turn


def _ratio(numerator: float, denominator: float) -> float:
    return round(numerator / denominator, 2) if denominator else float("nan")


def _latency_rows(latency: float, figures: dict[str, Any]) -> list[dict[str, Any]]:
    medians, bursts = figures["medians"], figures["bursts"]
    rows = []
    measures = [
        ("first turn, ms p50", "first"),
        ("warm follow-up, ms p50", "follow-up"),
        ("streamed first turn: first token, ms p50", "ttft stream first"),
        ("streamed follow-up: first token, ms p50", "ttft stream follow-up"),
        ("streamed follow-up: end, ms p50", "stream follow-up"),
    ]
    for label, kind in measures:
        row: dict[str, Any] = {"model_ms": round(latency * 1000), "measure": label}
        for build in [*BUILDS, FLOOR]:
            row[build] = medians.get(f"{build} {kind}")
        row["orc/per-call"] = _ratio(row[ORC], row[PER_CALL])
        row["orc/session"] = _ratio(row[ORC], row[SESSION])
        rows.append(row)
    for label, key in (("burst of turns at once, wall ms", "total_ms"), ("burst / one turn", "ratio")):
        if not bursts:
            break
        row = {"model_ms": round(latency * 1000), "measure": label}
        for build in [*BUILDS, FLOOR]:
            row[build] = bursts[build][key]
        row["orc/per-call"] = _ratio(row[ORC], row[PER_CALL])
        row["orc/session"] = _ratio(row[ORC], row[SESSION])
        rows.append(row)
    for label, kind in (("model calls, first turn", "first"), ("model calls, follow-up", "follow-up")):
        row = {"model_ms": round(latency * 1000), "measure": label}
        for build in BUILDS:
            row[build] = "/".join(str(c) for c in figures["calls"].get(f"{build} {kind}", []))
        rows.append(row)
    return rows


def _token_rows(per_turn: dict[str, list[dict[str, int]]]) -> list[dict[str, Any]]:
    rows = []
    for turn in (1, 2, *TOKEN_TURNS):
        if turn > len(per_turn[ORC]):
            continue
        orc, peer = per_turn[ORC][turn - 1], per_turn["peer"][turn - 1]
        rows.append(
            {
                "turn": turn,
                "orc_input_tokens": orc["input_tokens"],
                "peer_input_tokens": peer["input_tokens"],
                "orc/peer": _ratio(orc["input_tokens"], peer["input_tokens"]),
                "orc_model_calls": orc["model_calls"],
                "peer_model_calls": peer["model_calls"],
            }
        )
    return rows


def _specs(latencies: Sequence[float], mcp_url: str, folder: Path) -> list[ServerSpec]:
    specs = []
    for latency in latencies:
        tag = f"{round(latency * 1000)}ms"
        common = ("--latency", str(latency))
        specs.append(ServerSpec(f"{ORC}@{tag}", "orc", (*common, "--home", str(folder / f"orc-{tag}"))))
        for build, variant in ((PER_CALL, "per-call"), (SESSION, "session")):
            home = str(folder / f"peer-{variant}-{tag}")
            options = (*common, "--home", home, "--mcp-url", mcp_url, "--variant", variant)
            specs.append(ServerSpec(f"{build}@{tag}", "peer", options))
    return specs


async def run(
    *,
    latencies: Sequence[float] = (0.0, 0.5),
    rounds: Sequence[int] = (10, 4),
    turns: int = 100,
    bursts: int = 3,
    conversation_turns: int = 50,
    limit_s: float = 120.0,
) -> BenchResult:
    """The whole comparison; ``rounds[i]`` interleaved rounds at ``latencies[i]`` seconds per model call."""
    if len(rounds) != len(latencies):
        raise ValueError("one round count per latency")
    result = BenchResult(name="peer")
    phases: dict[str, float] = {}
    clock = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        phases[name] = round(now - clock, 1)
        clock = now

    with temporary_home() as home:
        folder = home.parent
        docs = folder / "docs"
        docs.mkdir(parents=True)
        for name, data in SAMPLE_DOCS.items():
            (docs / name).write_bytes(data)
        shared = [ServerSpec("mcp", "mcp", ("--docs", str(docs))), ServerSpec(FLOOR, "floor")]
        async with serve_all(shared, folder / "logs") as base:
            mcp_url = base["mcp"].base_url + "/mcp"
            async with serve_all(_specs(latencies, mcp_url, folder), folder / "logs") as servers:
                phase("servers started")
                for latency, count in zip(latencies, rounds, strict=True):
                    tag = f"{round(latency * 1000)}ms"
                    chosen = {build: servers[f"{build}@{tag}"] for build in BUILDS} | {FLOOR: base[FLOOR]}
                    burst = turns if latency == max(latencies) else 0
                    figures = await _measure_latency(
                        chosen, latency, rounds=count, turns=burst, bursts=bursts, limit_s=limit_s
                    )
                    result.rows.extend(_latency_rows(latency, figures))
                    result.details[f"latency_{tag}"] = figures
                    phase(f"{tag} per call")
            per_turn = await _conversation(mcp_url, conversation_turns, folder)
            phase("conversation")
    result.details["conversation"] = per_turn
    result.details["token_rows"] = _token_rows(per_turn)
    result.details["phase_s"] = phases
    result.details["token_estimate"] = "characters / 4 of every message, tool call and offered tool schema"
    _checks(result, latencies)
    return result


def _checks(result: BenchResult, latencies: Sequence[float]) -> None:
    """Issue 11's targets, orc against the faster peer variant of the same run."""
    slow = [latency for latency in latencies if latency > 0]
    if slow:
        latency = max(slow)
        tag = f"{round(latency * 1000)}ms"
        medians = result.details[f"latency_{tag}"]["medians"]
        peer = min(medians[f"{PER_CALL} follow-up"], medians[f"{SESSION} follow-up"])
        result.checks.append(
            Check(
                f"warm follow-up at {tag}/call, orc / peer",
                _ratio(medians[f"{ORC} follow-up"], peer),
                FOLLOW_UP_RATIO_LIMIT,
                "x",
            )
        )
        bursts = result.details[f"latency_{tag}"]["bursts"]
        if bursts and latency == BURST_TARGET_LATENCY:
            fastest = min(bursts[PER_CALL]["total_ms"], bursts[SESSION]["total_ms"])
            result.checks.append(
                Check(
                    f"burst of first turns at once at {tag}/call, orc / peer wall time (medians)",
                    _ratio(bursts[ORC]["total_ms"], fastest),
                    BURST_RATIO_LIMIT,
                    "x",
                )
            )
        for kind in ("first", "follow-up"):
            result.checks.append(
                Check(
                    f"time to first token at {tag}/call, orc {kind}",
                    medians[f"{ORC} ttft stream {kind}"],
                    latency * 1000 + TTFT_MARGIN_MS,
                )
            )
    rows = {row["turn"]: row for row in result.details["token_rows"]}
    if 20 in rows:
        result.checks.append(
            Check("input tokens at turn 20, orc / peer", rows[20]["orc/peer"], TOKENS_RATIO_LIMIT, "x")
        )
    if 10 in rows and 50 in rows:
        flat = _ratio(rows[50]["orc_input_tokens"], rows[10]["orc_input_tokens"])
        result.checks.append(Check("orc input tokens, turn 50 / turn 10", flat, TOKENS_FLAT_LIMIT, "x"))
