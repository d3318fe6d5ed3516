"""Shared set-up for the benchmarks: sample documents, the scripted model, stores, servers and reporting.

Nothing here is timed itself; the benchmark modules decide what to measure. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import datetime
import io
import json
import os
import platform
import pstats
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
import uvicorn
from asgi_lifespan import LifespanManager
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from starlette.types import ASGIApp

from orc.composition import Services, Stores, build_runtime
from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.testing import FunctionChatModel

StorageKind = Literal["embedded", "memory"]
STORAGE_KINDS: tuple[StorageKind, ...] = ("embedded", "memory")

# Three small documents, a few hundred bytes each (the "three small attached documents" of the targets).
SAMPLE_DOCS: dict[str, bytes] = {
    "lease.txt": (
        b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first business day of each month.\n\n"
        b"Either party may end the lease by giving at least 60 days' written notice.\n\n"
        b"The tenant may keep one small pet with the landlord's written consent.\n"
    ),
    "handbook.txt": (
        b"Employee handbook.\n\nNew employees get 25 vacation days per calendar year.\n\n"
        b"Remote work is allowed up to three days a week after the probation period.\n\n"
        b"Expenses must be filed within 30 days with receipts attached.\n"
    ),
    "warranty.txt": (
        b"Product warranty.\n\nThe warranty lasts two years from the date of purchase.\n\n"
        b"Battery life is rated at 38 hours of continuous playback.\n\n"
        b"Water damage is not covered by this warranty.\n"
    ),
}
SAMPLE_NAMES: list[str] = list(SAMPLE_DOCS)

REPO = Path(__file__).resolve().parent.parent
_REF = re.compile(r'<source ref="([^"]+)"')

# Bounds for everything that waits (seconds).
SERVER_START_TIMEOUT = 20.0
SERVER_STOP_TIMEOUT = 10.0
REQUEST_TIMEOUT = 60.0


def cite_first_source(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
    """A deterministic stand-in for a model: cite the first ``<source ref>`` it is shown.

    Same behaviour as ``tests/graph/test_document_chat_workflow.py``: plans a tool call when tools are offered
    (never the case with attached documents), otherwise answers with a short sentence citing the first source
    of its system prompt (history messages before the question change nothing).
    """
    system = next((m.text for m in messages if isinstance(m, SystemMessage)), "")
    if tools and not any(isinstance(m, ToolMessage) for m in messages):
        return AIMessage("", tool_calls=[{"name": tools[0]["function"]["name"], "args": {"text": "hi"}, "id": "c1"}])
    refs = _REF.findall(system)
    return f"Here is what the documents say [{refs[0]}]." if refs else "No sources."


def scripted_model(latency: float = 0.0) -> FunctionChatModel:
    """The benchmark model: :func:`cite_first_source`, taking ``latency`` seconds per request."""
    return FunctionChatModel(cite_first_source, latency=latency)


def bench_settings(home: Path, **overrides: Any) -> Settings:
    """Embedded-default settings rooted at ``home`` (explicit, so stray ``ORC_`` variables do not change them)."""
    values: dict[str, Any] = {"home": home, "model": "offline", "storage": "embedded", "auth": "none"}
    values.update(overrides)
    return Settings(**values)


def memory_stores() -> Stores:
    """In-memory collections and blobs, to separate the storage cost from the orchestration cost."""
    return Stores(collections=MemoryCollectionProvider(), blobs=MemoryBlobStore())


def stores_for(kind: StorageKind) -> Stores | None:
    """``None`` (the configured embedded SQLite + local folder) or fresh memory stores."""
    return memory_stores() if kind == "memory" else None


@contextlib.contextmanager
def temporary_home() -> Iterator[Path]:
    """A throw-away ``ORC_HOME`` folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="orc-bench-") as folder:
        yield Path(folder) / "home"


@asynccontextmanager
async def open_services(kind: StorageKind, model: FunctionChatModel, home: Path) -> AsyncIterator[Services]:
    """A built process on ``kind`` storage with ``model``, closed on exit."""
    async with build_runtime(bench_settings(home), model=model, stores=stores_for(kind)) as services:
        yield services


async def attach_samples(services: Services, conversation_id: str, names: Sequence[str] = SAMPLE_NAMES) -> None:
    """Upload sample documents to a conversation and wait until their digests are made (not timed).

    An upload starts digests in the background; waiting keeps that work out of the turns timed next.
    """
    await services.foundation.session_files.add(
        LOCAL_PRINCIPAL, conversation_id, [Upload(name, SAMPLE_DOCS[name]) for name in names]
    )
    if not await services.documents.digests.wait_idle(LOCAL_PRINCIPAL, conversation_id, REQUEST_TIMEOUT):
        raise RuntimeError(f"the digests of {conversation_id} did not settle in {REQUEST_TIMEOUT:.0f} s")


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@asynccontextmanager
async def serve_on_loopback(app: ASGIApp) -> AsyncIterator[str]:
    """Run ``app`` with uvicorn on a free 127.0.0.1 port as a task of this event loop; yield its base URL.

    Startup is awaited with a bounded polling loop on ``server.started``; shutdown sets ``should_exit`` and
    waits a bounded time before cancelling the task.
    """
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        lifespan="on",
        access_log=False,
        log_level="warning",
        backlog=2048,
        timeout_keep_alive=30,
    )
    server = uvicorn.Server(config)
    # uvicorn captures SIGINT/SIGTERM while serving and re-raises them after shutdown, so Ctrl+C still works.
    task = asyncio.create_task(server.serve(), name=f"uvicorn-{port}")
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SERVER_START_TIMEOUT
        while not server.started:
            if task.done():
                task.result()  # re-raise the startup failure
                raise RuntimeError("uvicorn stopped before it started")
            if loop.time() > deadline:
                raise TimeoutError(f"uvicorn did not start within {SERVER_START_TIMEOUT} s")
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(task), SERVER_STOP_TIMEOUT)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


@dataclass(frozen=True)
class ServerProcess:
    """A benchmark server running in its own process (see :mod:`bench.server`)."""

    base_url: str
    pid: int
    workers: int
    log: Path


@dataclass(frozen=True)
class ServerOptions:
    """How to run ``python -m bench.server`` (see its module docstring)."""

    latency: float = 0.0
    storage: StorageKind = "embedded"
    workers: int = 1
    stock_socket: bool = False
    profile_dir: Path | None = None

    def command(self, port: int, home: Path) -> list[str]:
        """The command line of the server process."""
        command = [sys.executable, "-m", "bench.server", "--port", str(port), "--latency", str(self.latency)]
        command += ["--home", str(home), "--storage", self.storage, "--workers", str(self.workers)]
        if self.profile_dir is not None:
            command += ["--profile-dir", str(self.profile_dir)]
        if self.stock_socket:
            command.append("--stock-socket")
        return command


def _log_tail(log: Path, limit: int = 2000) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-limit:]
    return ""


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server (uvicorn shuts down gracefully, workers included); SIGKILL its group if it hangs."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=SERVER_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        # The server was started in a session of its own: its process group is it and its workers only.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=SERVER_STOP_TIMEOUT)


def _spawn_server(
    port: int, home: Path, options: ServerOptions, repo: Path = REPO
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start ``python -m bench.server`` of the tree ``repo`` in a session of its own; its output goes to a log file
    next to ``home``."""
    home.parent.mkdir(parents=True, exist_ok=True)
    log = home.parent / f"server-{port}.log"
    env = dict(os.environ)
    # Import orc and bench from the tree this bench/ sits in (e.g. a `git archive` of HEAD), in every worker.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH", "")]))
    with log.open("wb") as sink:
        process = subprocess.Popen(
            options.command(port, home),
            cwd=repo,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return process, log


@asynccontextmanager
async def serve_in_subprocess(home: Path, options: ServerOptions, *, repo: Path = REPO) -> AsyncIterator[ServerProcess]:
    """Start ``python -m bench.server`` (of the tree ``repo``: this one by default) on a free 127.0.0.1 port; yield it
    once ``/api/health`` says ``ok``.

    Readiness is polled with a bounded deadline (and fails early if the process exits); on exit the server is
    sent SIGTERM and waited for, with SIGKILL to its own process group as a bounded fallback. The server's
    output goes to a log file next to ``home``, quoted when it fails to start.
    """
    port = free_port()
    process, log = _spawn_server(port, home, options, repo)
    workers = options.workers
    base_url = f"http://127.0.0.1:{port}"
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SERVER_START_TIMEOUT * max(1, workers)
        async with loopback_client(base_url, connections=1) as probe:
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"bench.server exited with {process.returncode}:\n{_log_tail(log)}")
                if loop.time() > deadline:
                    raise TimeoutError(f"bench.server did not become ready on {base_url}:\n{_log_tail(log)}")
                with contextlib.suppress(httpx.HTTPError):
                    response = await probe.get("/api/health", timeout=2.0)
                    if response.status_code == 200 and response.json().get("status") == "ok":
                        break
                await asyncio.sleep(0.05)  # poll interval, not a wait for readiness
        yield ServerProcess(base_url=base_url, pid=process.pid, workers=workers, log=log)
    finally:
        await asyncio.to_thread(_stop_process, process)


def _proc_children(pid: int) -> list[int]:
    children: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                children += [int(child) for child in (task / "children").read_text().split()]
    return children


def process_tree_cpu_seconds(pid: int, max_processes: int = 64) -> float:
    """User + system CPU time of ``pid`` and its live descendants (from ``/proc``; 0 where unavailable).

    Used to read the CPU a server process (and its uvicorn workers) spent while the bench process drove it.
    """
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0.0
    pending: list[int] = [pid]
    seen: set[int] = set()
    while pending and len(seen) < max_processes:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14 and 15)
        pending += _proc_children(current)
    return total


@asynccontextmanager
async def asgi_client(app: ASGIApp) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client calling ``app`` in-process through ``ASGITransport`` (lifespan run by asgi-lifespan)."""
    async with LifespanManager(app, startup_timeout=SERVER_START_TIMEOUT, shutdown_timeout=SERVER_STOP_TIMEOUT) as lm:
        transport = httpx.ASGITransport(app=lm.app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1:8000", timeout=REQUEST_TIMEOUT
        ) as client:
            yield client


def loopback_client(base_url: str, *, connections: int = 16) -> httpx.AsyncClient:
    """An httpx client for a loopback server, with enough pooled connections and bounded timeouts."""
    return httpx.AsyncClient(
        base_url=base_url,
        timeout=httpx.Timeout(REQUEST_TIMEOUT, connect=10.0),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        trust_env=False,  # never route loopback through a proxy from the environment
    )


async def upload_http(client: httpx.AsyncClient, conversation_id: str, names: Sequence[str]) -> None:
    """Upload sample documents to a conversation through ``POST /api/sessions/{id}/context/files`` and wait until
    their digests are made (``GET …/context/stream`` ends when nothing is parsing), so that background work does
    not overlap the turns timed next."""
    parts = [("files", (name, SAMPLE_DOCS[name], "text/plain")) for name in names]
    response = await client.post(f"/api/sessions/{conversation_id}/context/files", files=parts)
    if response.status_code != 201:
        raise RuntimeError(f"upload failed: {response.status_code} {response.text[:300]}")
    await settled_http(client, conversation_id)


async def settled_http(client: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    """The session's manifest once nothing is parsing: the last one ``GET …/context/stream`` sends (the stream
    ends by itself then, bounded by the server)."""
    stream = await client.get(f"/api/sessions/{session_id}/context/stream")
    manifests = [
        json.loads(block.split("data: ", 1)[1])
        for block in stream.text.split("\n\n")
        if block.startswith("event: manifest") and "data: " in block
    ]
    if stream.status_code != 200 or not manifests or manifests[-1]["parsing"]:
        raise RuntimeError(f"the digests of {session_id} did not settle: {stream.status_code}")
    manifest: dict[str, Any] = manifests[-1]
    return manifest


def turn_body(
    conversation_id: str, names: Sequence[str], question: str = "What is the monthly rent?"
) -> dict[str, Any]:
    """The JSON body of ``POST /api/orc`` for one turn."""
    return {"question": question, "conversation_id": conversation_id, "blob_names": list(names)}


async def post_turn(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    """POST one turn and return the JSON answer; any non-200 is an error."""
    response = await client.post("/api/orc", json=body)
    if response.status_code != 200:
        raise RuntimeError(f"turn failed: {response.status_code} {response.text[:300]}")
    result: dict[str, Any] = response.json()
    return result


# -- profiles --------------------------------------------------------------------------------------------------


def _package_of(filename: str) -> str:
    """A coarse owner for a profiled function: the top-level package (or the stdlib module) it lives in."""
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins/C"
    path = Path(filename)
    parts = path.parts
    for anchor in ("site-packages", "dist-packages"):
        if anchor in parts:
            index = parts.index(anchor)
            if index + 1 < len(parts):
                return parts[index + 1].removesuffix(".py").split(".")[0]
    for anchor in ("orc", "mcp_server", "bench"):
        if anchor in parts:
            return anchor
    if "python3" in "/".join(parts) or "lib" in parts:
        name = path.stem
        parent = path.parent.name
        return f"stdlib:{parent if parent not in {'lib', 'python3.11'} else name}"
    return path.stem


def profile_summary(
    profile: cProfile.Profile | pstats.Stats | str | Path, iterations: int, top: int = 25
) -> dict[str, Any]:
    """Per-turn figures from a profile of ``iterations`` turns: self time by package, top functions by self and
    by cumulative time (cumulative time of coroutines counts each resumption, so loop plumbing is left out).

    ``profile`` is a profiler, its stats, or a pstats file (e.g. written by a :mod:`bench.server` process)."""
    stats = (
        profile
        if isinstance(profile, pstats.Stats)
        else pstats.Stats(str(profile) if isinstance(profile, Path) else profile, stream=io.StringIO())
    )
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in raw.values())  # sum of self (tottime) over every function
    by_package: dict[str, float] = {}
    functions = []
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in raw.items():
        package = _package_of(filename)
        by_package[package] = by_package.get(package, 0.0) + tottime
        short = filename if filename.startswith("~") else "/".join(Path(filename).parts[-2:])
        functions.append(
            {
                "function": f"{short}:{line}({name})",
                "package": package,
                "calls_per_turn": round(ncalls / iterations, 1),
                "self_ms_per_turn": round(tottime * 1000 / iterations, 3),
                "cum_ms_per_turn": round(cumtime * 1000 / iterations, 3),
            }
        )
    by_self = sorted(functions, key=lambda f: f["self_ms_per_turn"], reverse=True)[:top]
    by_cum = sorted(functions, key=lambda f: f["cum_ms_per_turn"], reverse=True)
    # Cumulative time of coroutines counts each resumption; keep the informative frames, not the loop plumbing.
    plumbing = ("base_events.py", "events.py", "runners.py", "tasks.py", "bench/", "~:0(<method 'run'")
    by_cum = [f for f in by_cum if not any(p in f["function"] for p in plumbing)][:top]
    packages = sorted(
        (
            {
                "package": name,
                "self_ms_per_turn": round(seconds * 1000 / iterations, 3),
                "share": round(seconds / total, 3) if total else 0.0,
            }
            for name, seconds in by_package.items()
        ),
        key=lambda p: p["self_ms_per_turn"],
        reverse=True,
    )
    return {
        "profiled_cpu_ms_per_turn": round(total * 1000 / iterations, 3),
        "by_package": packages,
        "top_self": by_self,
        "top_cumulative": by_cum,
    }


# -- statistics and reporting ------------------------------------------------------------------------------


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(samples_ms: Sequence[float]) -> dict[str, float]:
    """n, mean, min, p50, p90, p99 and max of millisecond samples (rounded to µs)."""
    return {
        "n": len(samples_ms),
        "mean": round(statistics.fmean(samples_ms), 3),
        "min": round(min(samples_ms), 3),
        "p50": round(percentile(samples_ms, 50), 3),
        "p90": round(percentile(samples_ms, 90), 3),
        "p99": round(percentile(samples_ms, 99), 3),
        "max": round(max(samples_ms), 3),
    }


@dataclass
class Check:
    """One target: what was measured against what limit, and whether it passed."""

    target: str
    measured: float
    limit: float
    unit: str = "ms"

    @property
    def passed(self) -> bool:
        """Whether the measured value is within the limit."""
        return self.measured <= self.limit

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "target": self.target,
            "measured": self.measured,
            "limit": self.limit,
            "unit": self.unit,
            "passed": self.passed,
        }


@dataclass
class BenchResult:
    """What one benchmark module reports: rows for the table, target checks and free-form details."""

    name: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "name": self.name,
            "rows": self.rows,
            "checks": [check.as_dict() for check in self.checks],
            "details": self.details,
        }


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A plain-text table of ``rows`` with ``columns`` (missing cells are blank)."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.2f}"
        return "" if value is None else str(value)

    table = [list(columns)] + [[cell(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    lines = ["  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)) for line in table]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def format_checks(checks: Sequence[Check]) -> str:
    """One line per target: PASS/FAIL, measured vs limit."""
    return "\n".join(
        f"  [{'PASS' if c.passed else 'FAIL'}] {c.target}: {c.measured:.2f} {c.unit} (limit {c.limit:g} {c.unit})"
        for c in checks
    )


def _command(*args: str) -> str:
    try:
        # rstrip only: `git status --porcelain` lines start with a status column that may be a space.
        return subprocess.run(args, capture_output=True, text=True, timeout=5, check=False).stdout.rstrip()
    except (OSError, subprocess.SubprocessError):
        return ""


SPEED_PROBE_ITERATIONS = 1_000_000


def host_speed_ms() -> float:
    """Milliseconds a fixed pure-Python loop takes now (median of 3): the yardstick for comparing runs.

    Shared virtual machines change speed by up to 1.7x within seconds, and a turn's figures move with them; the
    probe taken before and after each benchmark says which kind of moment the figures come from.
    """
    times = []
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for number in range(SPEED_PROBE_ITERATIONS):
            total += number
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


def machine_info() -> dict[str, Any]:
    """The machine and moment the figures were measured on."""
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "date_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nproc": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "cpu": cpu or platform.processor(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "commit": _command("git", "-C", str(REPO), "rev-parse", "--short", "HEAD"),
        # Uncommitted changes to the product (bench/ aside) make the figures hard to reproduce.
        "uncommitted_product_changes": [
            line[3:]
            for line in _command("git", "-C", str(REPO), "status", "--porcelain").splitlines()
            if line[3:] and not line[3:].startswith("bench/")
        ],
    }
