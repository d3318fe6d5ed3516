"""The Azure Storage Queue JobQueue and the queue worker against Azurite's queue service."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from azure.storage.queue.aio import QueueClient

from orc.cli.worker import run_worker
from orc.composition import JobQueues
from orc.composition.tuning import Tuning
from orc.documents.intake.uploads import Upload
from orc.settings import Settings
from orc.storage.azure_queue import AzureJobQueue
from tests.documents.library_support import ACME, memory_stores
from tests.emulators import AzuriteQueue
from tests.jobs.support import ORG, Ledger, process, running_workers, until


def fresh_queue(azurite_queue: AzuriteQueue, name: str | None = None) -> AzureJobQueue:
    name = name or f"jobs-{uuid.uuid4().hex[:12]}"
    return AzureJobQueue.from_connection_string(azurite_queue.connection_string, name)


@pytest_asyncio.fixture
async def queues(azurite_queue: AzuriteQueue) -> AsyncIterator[JobQueues]:
    made = JobQueues(documents=fresh_queue(azurite_queue), digests=fresh_queue(azurite_queue))
    yield made
    await made.documents.aclose()
    await made.digests.aclose()


async def test_a_job_round_trips_and_a_completed_delivery_is_gone(queues: JobQueues) -> None:
    await queues.documents.enqueue({"kind": "process", "n": 1})
    (job,) = await queues.documents.receive(5, 30)
    await queues.documents.complete(job)

    assert job.body == {"kind": "process", "n": 1} and job.dequeue_count == 1
    assert await queues.documents.receive(5, 30) == []


async def test_an_abandoned_job_comes_back_with_a_higher_dequeue_count_and_a_stale_receipt_is_harmless(
    queues: JobQueues,
) -> None:
    await queues.documents.enqueue({"kind": "process"})
    (first,) = await queues.documents.receive(1, 30)
    await queues.documents.abandon(first)
    (second,) = await queues.documents.receive(1, 30)
    await queues.documents.complete(first)  # the old receipt: a no-op, the newer delivery stays
    await queues.documents.abandon(second)
    (third,) = await queues.documents.receive(1, 30)

    assert (first.dequeue_count, second.dequeue_count, third.dequeue_count) == (1, 2, 3)


async def test_jobs_survive_a_worker_restart(queues: JobQueues) -> None:
    stores, ledger = memory_stores(), Ledger()
    tuning = Tuning(queue_visibility_seconds=1)
    async with process(stores, queues, tuning) as web:
        added = await web.foundation.context_documents.add(
            ACME, ORG, [Upload(f"d{i}.txt", f"Document {i}.".encode()) for i in range(3)], wait_seconds=0
        )
    # The first worker takes every job and dies before finishing any of them.
    async with process(stores, queues, tuning):
        taken = await queues.documents.receive(10, visibility_seconds=1)
    assert len(taken) == 3

    async with running_workers(stores, queues, ledger, 1, tuning) as (worker,):
        await until(lambda: _ready(worker, 3))

    assert all(ledger.completions(doc.record.document_id) == 1 for doc in added)


async def test_two_workers_never_complete_one_job_twice(queues: JobQueues) -> None:
    stores, ledger = memory_stores(), Ledger()
    tuning = Tuning(queue_visibility_seconds=1)
    async with process(stores, queues, tuning) as web:
        added = await web.foundation.context_documents.add(
            ACME, ORG, [Upload(f"d{i}.txt", f"Document {i}.".encode()) for i in range(10)], wait_seconds=0
        )
        # At-least-once delivery: every job is sent a second time.
        for job in await queues.documents.receive(32, 30):
            await queues.documents.enqueue(job.body)
            await queues.documents.abandon(job)

        async with running_workers(stores, queues, ledger, 2, tuning):
            await until(lambda: _ready(web, 10))
            await until(lambda: _handled_twice(ledger, [doc.record.document_id for doc in added]))

    assert all(ledger.completions(doc.record.document_id) == 1 for doc in added)


async def test_a_burst_of_200_uploads_spreads_over_two_workers(queues: JobQueues) -> None:
    stores, ledger = memory_stores(), Ledger()
    async with process(stores, queues) as web:
        uploads = [Upload(f"doc-{i:03}.txt", f"Document {i} says {i * 7}.".encode()) for i in range(200)]
        added = await web.foundation.context_documents.add(ACME, ORG, uploads, wait_seconds=0)
        async with running_workers(stores, queues, ledger, 2):
            await until(lambda: _ready(web, 200))

    assert all(ledger.completions(doc.record.document_id) == 1 for doc in added)
    assert set(ledger.by_worker) == {"worker-0", "worker-1"}
    assert min(ledger.by_worker.values()) >= 20, ledger.by_worker


async def _ready(services, count: int) -> bool:  # type: ignore[no-untyped-def]
    docs = await services.foundation.context_documents.documents(ACME, ORG)
    return len(docs) == count and all(doc.status == "ready" for doc in docs)


async def _handled_twice(ledger: Ledger, ids: list[str]) -> bool:
    return all(sum(ledger.by_document.get(i, {}).values()) >= 2 for i in ids)


async def test_orc_worker_runs_two_jobs_at_a_time_unless_its_concurrency_option_says_otherwise(
    azurite_queue: AzuriteQueue, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(jobs="queue", queue_connection_string=azurite_queue.connection_string)
    stop = asyncio.Event()
    stop.set()  # consume nothing: start, say how, and stop

    assert await run_worker(settings, stop=stop) == 0
    assert await run_worker(settings, concurrency=1, stop=stop) == 0

    said = capsys.readouterr().err
    assert "2 jobs at a time" in said and "1 job at a time" in said


STRAY_MESSAGES = {
    "not base64": "plain text, as a portal or another producer may send it",
    "not UTF-8": base64.b64encode(b"\xff\xfe not json").decode(),
    "not JSON": base64.b64encode(b"{not json").decode(),
    "not an object": base64.b64encode(b"[1, 2, 3]").decode(),
    "nested too deep": base64.b64encode(b"[" * 20000 + b"]" * 20000).decode(),
}


async def test_stray_messages_are_dropped_as_malformed_and_the_jobs_behind_them_are_processed(
    azurite_queue: AzuriteQueue, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"jobs-{uuid.uuid4().hex[:12]}"
    queues = JobQueues(documents=fresh_queue(azurite_queue, name), digests=fresh_queue(azurite_queue))
    stores, ledger = memory_stores(), Ledger()
    try:
        async with QueueClient.from_connection_string(azurite_queue.connection_string, name) as raw:
            await raw.create_queue()
            for text in STRAY_MESSAGES.values():
                await raw.send_message(text)
        async with process(stores, queues) as web:
            (added,) = await web.foundation.context_documents.add(
                ACME, ORG, [Upload("after.txt", b"The job behind the strays.")], wait_seconds=0
            )
            async with running_workers(stores, queues, ledger, 1) as (worker,):
                # The queue keeps no strict order: the job may be done before every stray was taken.
                await until(lambda: _ready_and_dropped(worker, caplog, len(STRAY_MESSAGES)))

        assert ledger.completions(added.record.document_id) == 1
        assert caplog.text.count("dropping a malformed process job") == len(STRAY_MESSAGES)
        assert await queues.documents.receive(32, 30) == []  # every stray was completed, none waits to come back
    finally:
        await queues.documents.aclose()
        await queues.digests.aclose()


async def _ready_and_dropped(services, caplog: pytest.LogCaptureFixture, strays: int) -> bool:  # type: ignore[no-untyped-def]
    return await _ready(services, 1) and caplog.text.count("dropping a malformed process job") == strays
