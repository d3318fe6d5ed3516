"""Processes that share stores and job queues: an uploading "web" runtime and any number of worker runtimes."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field

from orc.composition import JobQueues, Services, Stores, build_runtime
from orc.composition.tuning import TUNED, Tuning
from orc.documents.records import ContextRef
from orc.settings import Settings

ORG = ContextRef("organization", "acme")


@dataclass
class Ledger:
    """Every handling's outcome, per document and per worker (what the tests count)."""

    by_document: dict[str, Counter[str]] = field(default_factory=dict)
    by_worker: Counter[str] = field(default_factory=Counter)

    def observer(self, worker: str) -> Callable[[str, str], None]:
        def observe(key: str, outcome: str) -> None:
            self.by_document.setdefault(key, Counter())[outcome] += 1
            if outcome in ("ready", "failed"):
                self.by_worker[worker] += 1

        return observe

    def completions(self, document_id: str) -> int:
        counts = self.by_document.get(document_id, Counter())
        return counts["ready"] + counts["failed"]


@asynccontextmanager
async def process(stores: Stores, queues: JobQueues, tuning: Tuning = TUNED) -> AsyncIterator[Services]:
    """One orc process over the shared stores and queues (``tuning``: shorter claims or fewer deliveries)."""
    async with build_runtime(Settings(), stores=stores, job_queues=queues, tuning=tuning) as services:
        yield services


@asynccontextmanager
async def running_workers(
    stores: Stores, queues: JobQueues, ledger: Ledger, count: int, tuning: Tuning = TUNED
) -> AsyncIterator[list[Services]]:
    """``count`` worker processes consuming the queues until the block ends."""
    stop = asyncio.Event()
    async with AsyncExitStack() as stack:
        workers = [await stack.enter_async_context(process(stores, queues, tuning)) for _ in range(count)]
        for index, worker in enumerate(workers):
            worker.documents.jobs.observer = ledger.observer(f"worker-{index}")
        loops = [
            asyncio.create_task(worker.documents.jobs.run(stop, concurrency=2, idle_pause=0.05)) for worker in workers
        ]
        try:
            yield workers
        finally:
            stop.set()
            await asyncio.gather(*loops)


async def until(condition: Callable[[], object], *, seconds: float = 240.0) -> None:
    """Poll an async condition until it holds (bounded: fails the test instead of hanging)."""
    async with asyncio.timeout(seconds):
        while not await condition():  # type: ignore[misc]  # noqa: ASYNC110 - the state is in storage, no event
            await asyncio.sleep(0.01)  # polling interval, not a wait for a fixed time
