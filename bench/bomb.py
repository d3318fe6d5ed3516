"""Target (issue 14): a PDF bomb at the upload size limit keeps the server's RSS below 512 MB above idle, and
another tenant's warm turn p95 ≤ 2× its idle p95 while the bomb is processed.

One runtime on embedded storage with the zero-latency scripted model, run twice: extraction in a worker process
under ``ORC_EXTRACTION_MEMORY_MB`` (the default) and in threads of the serving process
(``ORC_EXTRACTION_PROCESSES=0``). Tenant B asks warm document turns in a loop, first alone ("idle"), then while
tenant A uploads ``--bombs`` PDF bombs one after the other (each ≈ 1.2 MB, inflating to 400 MB inside the parser).
The serving process's RSS is sampled every 20 ms (``/proc/self/status``), so the peak is what the process held.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from bench.common import SAMPLE_DOCS, BenchResult, Check, bench_settings, percentile, scripted_model, temporary_home
from bench.documents_common import exit_with, standalone
from orc.composition import build_runtime
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.principal import Principal
from orc.turns import TurnRequest
from tests.documents.test_extraction_pool import pdf_bomb

RSS_LIMIT_MB = 512.0
P95_RATIO_LIMIT = 2.0
ATTACKER = Principal(organization="org-a", user="mallory", role="admin")
VICTIM = Principal(organization="org-b", user="alice", role="admin")


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--bombs", type=int, default=3, help="PDF bombs uploaded one after the other")
    parser.add_argument("--idle-turns", type=int, default=60)


def rss_mb() -> float:
    """The process's resident set, now."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _sample_rss(peak: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], rss_mb())
        await asyncio.sleep(0.02)


async def _turns(services, conversation: str, stop: asyncio.Event, samples: list[float]) -> None:  # type: ignore[no-untyped-def]
    request = TurnRequest(question="What is the monthly rent?", conversation_id=conversation, blob_names=["lease.txt"])
    while not stop.is_set():
        started = time.perf_counter()
        await services.orchestrator.ask(request, VICTIM)
        samples.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(0)


async def measure(home: Path, processes: int, bombs: int, idle_turns: int) -> dict[str, float]:
    """Idle p95, p95 under the bombs, and the RSS peak above idle, for one extraction mode."""
    settings = bench_settings(home, extraction_processes=processes)
    bomb = pdf_bomb()
    async with build_runtime(settings, model=scripted_model()) as services:
        folder = ContextRef("folder", "uploads")
        await services.foundation.directory.put(ATTACKER, folder, "Uploads", None)
        await services.foundation.session_files.add(VICTIM, "victim", [Upload("lease.txt", SAMPLE_DOCS["lease.txt"])])
        # Warm: the worker process (if any) is started and the victim's file cache filled before measuring.
        await services.foundation.context_documents.add(
            ATTACKER, folder, [Upload("warm.txt", b"Warm.")], wait_seconds=60
        )
        request = TurnRequest(question="What is the monthly rent?", conversation_id="victim", blob_names=["lease.txt"])
        for _ in range(10):
            await services.orchestrator.ask(request, VICTIM)
        idle: list[float] = []
        for _ in range(idle_turns):
            started = time.perf_counter()
            await services.orchestrator.ask(request, VICTIM)
            idle.append((time.perf_counter() - started) * 1000)
        baseline = rss_mb()
        peak = [baseline]
        stop = asyncio.Event()
        under: list[float] = []
        sampler = asyncio.create_task(_sample_rss(peak, stop))
        victim = asyncio.create_task(_turns(services, "victim", stop, under))
        failed = 0
        for number in range(bombs):
            (added,) = await services.foundation.context_documents.add(
                ATTACKER, folder, [Upload(f"bomb-{number}.pdf", bomb)], wait_seconds=120
            )
            failed += added.record.status == "failed"
        stop.set()
        await asyncio.gather(sampler, victim)
    return {
        "idle_p95_ms": round(percentile(idle, 95), 2),
        "bomb_p95_ms": round(percentile(under, 95), 2),
        "p95_ratio": round(percentile(under, 95) / percentile(idle, 95), 2),
        "rss_above_idle_mb": round(peak[0] - baseline, 1),
        "victim_turns_during_bombs": len(under),
        "bombs_failed": failed,
    }


async def run(args: argparse.Namespace) -> BenchResult:
    """Both extraction modes, workers first."""
    result = BenchResult(name="bomb")
    for label, processes in (("worker process (default)", 1), ("threads (ORC_EXTRACTION_PROCESSES=0)", 0)):
        with temporary_home() as home:
            figures = await measure(home, processes, args.bombs, args.idle_turns)
        result.rows.append({"extraction": label, **figures})
        if processes:
            result.checks.append(
                Check("RSS above idle with the bombs", figures["rss_above_idle_mb"], RSS_LIMIT_MB, "MB")
            )
            result.checks.append(Check("victim p95 under the bombs / idle", figures["p95_ratio"], P95_RATIO_LIMIT, "×"))
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
