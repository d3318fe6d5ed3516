"""Incremental context digests: what re-uploads and replacements cost (``python -m bench.digests``).

Targets (issue 4):

1. re-uploading 10 unchanged files makes 0 model calls, and the request's p50 is ≤ 100 ms;
2. replacing 1 of 10 files makes exactly 1 Task A and 1 Task B call;
3. report the tokens that replacement spends against re-digesting all 10 files (10 Task A + 1 Task B).

Everything runs in this process: the real ASGI app over ``httpx.ASGITransport`` on the embedded storage (SQLite
file + local folder in a temporary ``ORC_HOME``), with a digest model that answers like the offline model and
counts calls and tokens per task (about four characters per token, as the offline model reports them). An
optional per-call latency shows that requests never wait for digests. Waiting for the background work uses the
status stream (``GET …/context/stream`` ends when nothing is parsing), never a sleep.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from bench.common import settled_http
from orc.http import create_app
from orc.models.digesting import digest_reply
from orc.models.guard import forbid_model_requests
from orc.models.messages import approx_tokens
from orc.settings import Settings
from orc.testing import FunctionChatModel

SESSION = "bench-digests"
FILES = 10
REUPLOAD_LIMIT_MS = 100.0
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results" / "digests.json"
TOPICS = ["lease", "handbook", "warranty", "policy", "contract", "manual", "report", "minutes", "invoice", "memo"]


def sample_file(index: int, version: int = 1) -> tuple[str, bytes]:
    """A plain-text document of a few kilobytes (several spans), different for each index and version."""
    topic = TOPICS[index % len(TOPICS)]
    paragraphs = [f"{topic.title()} number {index}, version {version}."]
    for n in range(1, 13):
        paragraphs.append(
            f"Clause {n} of the {topic}: the amount due under item {n} is {100 * n + index + version} euros, "
            f"payable within {10 + n} days of the notice. The parties must keep records of item {n} for "
            f"{n + 1} years, and either party may ask for a copy in writing at any time."
        )
    return f"{topic}-{index}.txt", "\n\n".join(paragraphs).encode()


@dataclass
class Meter:
    """Digest model calls and tokens per task."""

    calls: dict[str, int] = field(default_factory=lambda: {"A": 0, "B": 0})
    tokens: dict[str, int] = field(default_factory=lambda: {"A": 0, "B": 0})

    def snapshot(self) -> dict[str, int]:
        """``{"A": calls, "B": calls, "A_tokens": ..., "B_tokens": ...}``."""
        return {**self.calls, "A_tokens": self.tokens["A"], "B_tokens": self.tokens["B"]}


def metered_model(meter: Meter, latency: float) -> FunctionChatModel:
    """A digest model answering like the offline model, counting each task's calls and tokens."""

    def answer(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
        reply = digest_reply(messages)
        if reply is None:
            raise AssertionError("the digest model received a request that is not Task A or Task B")
        envelope = next(m.text for m in messages if isinstance(m, HumanMessage) and m.text.startswith("TASK: "))
        task = "A" if envelope.startswith("TASK: PER_FILE_DIGEST") else "B"
        meter.calls[task] += 1
        meter.tokens[task] += sum(approx_tokens(m.text) for m in messages) + approx_tokens(reply)
        return reply

    return FunctionChatModel(answer, latency=latency, model_name="bench-digests")


@asynccontextmanager
async def client_for(home: Path, model: FunctionChatModel) -> AsyncIterator[httpx.AsyncClient]:
    """The app on embedded storage in ``home`` with ``model`` making digests."""
    settings = Settings(home=home, model="offline", storage="embedded", auth="none")
    app = create_app(settings, digest_model=model)
    async with LifespanManager(app, startup_timeout=30, shutdown_timeout=30) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000", timeout=120) as client:
            yield client


async def upload(client: httpx.AsyncClient, files: Sequence[tuple[str, bytes]]) -> tuple[dict[str, Any], float]:
    """POST the files; the response and the request's wall time in milliseconds."""
    parts = [("files", (name, data, "text/plain")) for name, data in files]
    started = time.perf_counter()
    response = await client.post(f"/api/sessions/{SESSION}/context/files", files=parts)
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 201:
        raise RuntimeError(f"upload failed: {response.status_code} {response.text[:300]}")
    body: dict[str, Any] = response.json()
    return body, elapsed


async def settled(client: httpx.AsyncClient) -> dict[str, Any]:
    """The manifest once nothing is parsing (the status stream ends then; the server bounds it)."""
    return await settled_http(client, SESSION)


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q``-th percentile by linear interpolation."""
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    """Per-task calls and tokens spent between two snapshots."""
    return {key: after[key] - before[key] for key in after}


async def run(iterations: int, latency: float) -> dict[str, Any]:
    """The three scenarios on one session of 10 files; returns the figures."""
    meter = Meter()
    files = [sample_file(index) for index in range(FILES)]
    with tempfile.TemporaryDirectory(prefix="orc-bench-digests-") as folder:
        async with client_for(Path(folder) / "home", metered_model(meter, latency)) as client:
            first_started = time.perf_counter()
            created, first_ms = await upload(client, files)
            manifest = await settled(client)
            first_settle_ms = (time.perf_counter() - first_started) * 1000
            initial = meter.snapshot()

            before = meter.snapshot()
            timings = []
            for _ in range(iterations):
                body, elapsed = await upload(client, files)
                if {f["diff"] for f in body["files"]} != {"unchanged"}:
                    raise RuntimeError("a re-upload of identical files was not 'unchanged'")
                timings.append(elapsed)
            reupload = delta(meter.snapshot(), before)
            after_reupload = await settled(client)

            target = next(f for f in manifest["files"] if f["filename"] == files[3][0])
            before = meter.snapshot()
            started = time.perf_counter()
            response = await client.put(
                f"/api/sessions/{SESSION}/context/files/{target['file_id']}",
                files=[("files", (files[3][0], sample_file(3, version=2)[1], "text/plain"))],
            )
            replace_ms = (time.perf_counter() - started) * 1000
            replaced = await settled(client)
            replace_settle_ms = (time.perf_counter() - started) * 1000
            replacement = delta(meter.snapshot(), before)
            if response.status_code != 200:
                raise RuntimeError(f"replace failed: {response.status_code} {response.text[:300]}")

    full = initial["A_tokens"] + initial["B_tokens"]
    spent = replacement["A_tokens"] + replacement["B_tokens"]
    return {
        "files": FILES,
        "bytes_per_file": len(files[0][1]),
        "model_latency_s": latency,
        "first_upload": {
            "request_ms": round(first_ms, 1),
            "until_settled_ms": round(first_settle_ms, 1),
            "revision": created["revision"],
            "calls": initial,
        },
        "reupload_unchanged": {
            "iterations": iterations,
            "p50_ms": round(statistics.median(timings), 2),
            "p90_ms": round(percentile(timings, 90), 2),
            "p99_ms": round(percentile(timings, 99), 2),
            "max_ms": round(max(timings), 2),
            "model_calls": reupload["A"] + reupload["B"],
            "revision_after": after_reupload["revision"],
            "banner": after_reupload["changes"]["text"],
        },
        "replace_one": {
            "request_ms": round(replace_ms, 1),
            "until_settled_ms": round(replace_settle_ms, 1),
            "task_a_calls": replacement["A"],
            "task_b_calls": replacement["B"],
            "tokens": spent,
            "tokens_redigest_all": full,
            "tokens_saved_pct": round(100 * (1 - spent / full), 1) if full else 0.0,
            "banner": replaced["changes"]["text"],
        },
    }


def checks(figures: dict[str, Any]) -> list[tuple[str, bool, str]]:
    """The targets with PASS/FAIL and the measured value."""
    reupload = figures["reupload_unchanged"]
    replace = figures["replace_one"]
    return [
        ("re-upload of 10 unchanged files: 0 model calls", reupload["model_calls"] == 0, str(reupload["model_calls"])),
        (
            f"re-upload of 10 unchanged files: p50 ≤ {REUPLOAD_LIMIT_MS:.0f} ms",
            reupload["p50_ms"] <= REUPLOAD_LIMIT_MS,
            f"{reupload['p50_ms']} ms",
        ),
        (
            "replace 1 of 10: exactly 1 Task A + 1 Task B",
            (replace["task_a_calls"], replace["task_b_calls"]) == (1, 1),
            f"{replace['task_a_calls']} A + {replace['task_b_calls']} B",
        ),
    ]


def report(figures: dict[str, Any]) -> str:
    """The readable result."""
    first, reupload, replace = figures["first_upload"], figures["reupload_unchanged"], figures["replace_one"]
    lines = [
        f"{figures['files']} files of {figures['bytes_per_file']} bytes, digest model latency "
        f"{figures['model_latency_s']} s per call",
        f"first upload: request {first['request_ms']} ms, settled after {first['until_settled_ms']} ms, "
        f"{first['calls']['A']} Task A ({first['calls']['A_tokens']} tokens) + {first['calls']['B']} Task B "
        f"({first['calls']['B_tokens']} tokens)",
        f"re-upload unchanged ×{reupload['iterations']}: p50 {reupload['p50_ms']} ms, p90 {reupload['p90_ms']} ms, "
        f"p99 {reupload['p99_ms']} ms, max {reupload['max_ms']} ms; {reupload['model_calls']} model calls; "
        f"revision stays {reupload['revision_after']}; banner '{reupload['banner']}'",
        f"replace 1 of 10: request {replace['request_ms']} ms, settled after {replace['until_settled_ms']} ms; "
        f"{replace['task_a_calls']} Task A + {replace['task_b_calls']} Task B = {replace['tokens']} tokens vs "
        f"{replace['tokens_redigest_all']} to re-digest all 10 ({replace['tokens_saved_pct']}% saved); "
        f"banner '{replace['banner']}'",
        "",
        "targets:",
    ]
    lines.extend(f"  {'PASS' if ok else 'FAIL'}  {name}: {value}" for name, ok, value in checks(figures))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print it, write the JSON figures; 1 with ``--strict`` when a target is missed."""
    parser = argparse.ArgumentParser(prog="python -m bench.digests", description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=50, help="timed re-uploads of the 10 files (50)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per digest model call (0)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help=f"JSON figures ({DEFAULT_OUTPUT.name})")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    with forbid_model_requests():
        figures = asyncio.run(run(args.iterations, args.latency))
    print(report(figures))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(figures, indent=2) + "\n")
    failed = [name for name, ok, _ in checks(figures) if not ok]
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
