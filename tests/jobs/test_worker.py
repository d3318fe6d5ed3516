"""Queue-driven processing on the in-process JobQueue: the worker's idempotency, claims and poison handling."""

from __future__ import annotations

import asyncio
import time

import pytest

from orc.composition import JobQueues
from orc.composition.tuning import Tuning
from orc.documents.intake.uploads import Upload
from orc.errors import JobBusy, StorageUnavailable
from orc.settings import Settings
from orc.storage.queues import InProcessJobQueue, ReceivedJob
from tests.documents.library_support import ACME, SESSION, memory_stores
from tests.jobs.support import ORG, Ledger, process, running_workers, until


def queues() -> JobQueues:
    return JobQueues(documents=InProcessJobQueue(), digests=InProcessJobQueue())


async def statuses(services, ids: list[str] | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    return [doc.status for doc in await services.foundation.context_documents.documents(ACME, ORG)]


async def test_an_upload_in_queue_mode_is_enqueued_and_a_worker_makes_it_ready() -> None:
    stores, jobs, ledger = memory_stores(), queues(), Ledger()
    async with process(stores, jobs) as web:
        (uploaded,) = await web.foundation.context_documents.add(
            ACME, ORG, [Upload("a.txt", b"Alpha.")], wait_seconds=0
        )
        assert uploaded.record.status == "processing" and len(jobs.documents) == 1  # type: ignore[arg-type]

        async with running_workers(stores, jobs, ledger, 1):
            await until(lambda: _all_ready(web))

    assert ledger.completions(uploaded.record.document_id) == 1


async def _all_ready(services) -> bool:  # type: ignore[no-untyped-def]
    found = await statuses(services)
    return bool(found) and all(status == "ready" for status in found)


async def test_a_job_delivered_twice_is_completed_once_by_two_workers() -> None:
    stores, jobs, ledger = memory_stores(), queues(), Ledger()
    tuning = Tuning(queue_visibility_seconds=1)
    async with process(stores, jobs, tuning) as web:
        uploads = [Upload(f"d{i}.txt", f"Document {i} text.".encode()) for i in range(10)]
        added = await web.foundation.context_documents.add(ACME, ORG, uploads, wait_seconds=0)
        # At-least-once delivery: every job is in the queue twice.
        delivered = await jobs.documents.receive(10, 60)
        for job in delivered:
            await jobs.documents.enqueue(job.body)
            await jobs.documents.abandon(job)
        assert len(delivered) == 10

        async with running_workers(stores, jobs, ledger, 2, tuning):
            await until(lambda: _all_ready(web))
            await until(lambda: _drained(jobs))

    for doc in added:
        assert ledger.completions(doc.record.document_id) == 1
        assert sum(ledger.by_document[doc.record.document_id].values()) >= 2


async def _drained(jobs: JobQueues) -> bool:
    return len(jobs.documents) == 0  # type: ignore[arg-type]


async def test_a_job_taken_by_a_worker_that_died_is_processed_by_the_next_one() -> None:
    stores, jobs, ledger = memory_stores(), queues(), Ledger()
    tuning = Tuning(queue_visibility_seconds=1)
    async with process(stores, jobs, tuning) as web:
        (uploaded,) = await web.foundation.context_documents.add(
            ACME, ORG, [Upload("a.txt", b"Alpha.")], wait_seconds=0
        )
        # A worker receives the job and dies before finishing it: nothing settles the delivery.
        (lost,) = await jobs.documents.receive(1, visibility_seconds=0.05)

        async with running_workers(stores, jobs, ledger, 1, tuning):
            await until(lambda: _all_ready(web))

    assert lost.dequeue_count == 1
    assert ledger.completions(uploaded.record.document_id) == 1


async def test_a_claim_held_by_a_live_worker_sends_the_delivery_back_for_later() -> None:
    stores, jobs = memory_stores(), queues()
    async with process(stores, jobs) as web, process(stores, jobs) as worker:
        await web.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Alpha.")], wait_seconds=0)
        (job,) = await jobs.documents.receive(1, 60)
        catalog = await stores.collections.collection("catalog")
        pk, item_id = job.body["partition_key"], job.body["item_id"]
        item = await catalog.get(pk, item_id)
        assert item is not None
        held = {**item.body, "processing_claim": {"by": "another-worker", "until": time.time() + 60}}
        await catalog.replace(pk, item_id, held, if_match=item.etag)

        with pytest.raises(JobBusy):
            await worker.documents.jobs.handle("process", job.body, job.dequeue_count)


async def test_a_poison_job_ends_its_document_failed_with_a_reason() -> None:
    stores, jobs = memory_stores(), queues()
    tuning = Tuning(queue_max_deliveries=2)
    async with process(stores, jobs, tuning) as web:
        await web.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Alpha.")], wait_seconds=0)
        (job,) = await jobs.documents.receive(1, 0)

        outcome = await web.documents.jobs.handle("process", job.body, dequeue_count=3)

        (doc,) = await web.foundation.context_documents.documents(ACME, ORG)
    assert outcome == "poisoned"
    assert doc.status == "failed" and "did not finish after 2 attempts" in (doc.status_reason or "")


async def test_a_settled_document_acknowledges_a_late_duplicate_without_work() -> None:
    stores, jobs = memory_stores(), queues()
    async with process(stores, jobs) as web:
        await web.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Alpha.")], wait_seconds=0)
        (job,) = await jobs.documents.receive(1, 0)
        first = await web.documents.jobs.handle("process", job.body, 1)
        second = await web.documents.jobs.handle("process", job.body, 2)

    assert (first, second) == ("ready", "duplicate")


async def test_a_processed_session_document_gets_its_digest_through_the_digest_queue() -> None:
    stores, jobs, ledger = memory_stores(), queues(), Ledger()
    async with process(stores, jobs) as web:
        await web.foundation.session_files.add(
            ACME, SESSION, [Upload("note.txt", b"The note says hello.")], wait_seconds=0
        )
    # The uploading instance is gone (recycled): only the queues carry the work on.
    async with running_workers(stores, jobs, ledger, 1) as (worker,):
        await until(lambda: _seen(ledger, SESSION, "digested"))
        assert await _digested(worker)


async def _seen(ledger: Ledger, key: str, outcome: str) -> bool:
    return ledger.by_document.get(key, {}).get(outcome, 0) > 0


async def _digested(services) -> bool:  # type: ignore[no-untyped-def]
    files = await services.foundation.session_files.files(ACME, SESSION)
    return bool(files) and all(f.digest_status == "ready" for f in files)


async def test_malformed_messages_are_dropped_not_retried_forever() -> None:
    async with process(memory_stores(), queues()) as worker:
        assert await worker.documents.jobs.handle_message("process", b"not json", 1) == "malformed"
        assert await worker.documents.jobs.handle_message("process", b'{"kind": "process"}', 1) == "malformed"


async def test_in_process_mode_keeps_asyncio_tasks_and_needs_no_worker() -> None:
    stores = memory_stores()
    async with process_inprocess(stores) as web:
        (uploaded,) = await web.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Alpha.")])
    assert uploaded.record.status == "ready"


def process_inprocess(stores):  # type: ignore[no-untyped-def]
    from orc.composition import build_runtime

    return build_runtime(Settings(), stores=stores)


async def test_queue_mode_without_a_queue_account_fails_fast_naming_the_settings() -> None:
    from orc.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="ORC_QUEUE_CONNECTION_STRING or ORC_QUEUE_ACCOUNT_URL"):
        Settings(jobs="queue").check()
    await asyncio.sleep(0)


async def test_the_worker_takes_the_deliveries_it_holds_in_turn_by_organization() -> None:
    from orc.documents.records import ContextRef
    from orc.principal import Principal

    globex = Principal(organization="globex", user="bob")
    stores, jobs = memory_stores(), queues()
    async with process(stores, jobs) as web:
        library = web.foundation.context_documents
        names = {}
        for n in range(3):
            (doc,) = await library.add(ACME, ORG, [Upload(f"a{n}.txt", f"Acme {n}.".encode())], wait_seconds=0)
            names[doc.record.document_id] = f"a{n}"
        (doc,) = await library.add(
            globex, ContextRef("organization", "globex"), [Upload("g.txt", b"Globex.")], wait_seconds=0
        )
        names[doc.record.document_id] = "g"
    order: list[str] = []
    stop = asyncio.Event()
    async with process(stores, jobs) as worker:
        worker.documents.jobs.observer = lambda key, outcome: order.append(names[key])
        running = asyncio.create_task(worker.documents.jobs.run(stop, concurrency=1, idle_pause=0.05))
        await until(lambda: _count_at_least(order, 4))
        stop.set()
        await running

    # One at a time, from a queue in the order a0 a1 a2 g: globex's document goes before acme's last, not after all
    # of them (how much earlier depends on how many deliveries each receive returned, which a busy machine changes:
    # held together with a2 it goes first), and acme's keep their queue order.
    assert order.index("g") < order.index("a2")
    assert [name for name in order if name != "g"] == ["a0", "a1", "a2"]


async def _count_at_least(items: list[str], count: int) -> bool:
    return len(items) >= count


class UnreachableAtFirst(InProcessJobQueue):
    """A queue whose first ``outage`` receives fail as an outage that outlasted the SDK's retries does."""

    def __init__(self, outage: int) -> None:
        super().__init__()
        self.outage = outage

    async def receive(self, max_jobs: int, visibility_seconds: float) -> list[ReceivedJob]:
        if self.outage > 0:
            self.outage -= 1
            raise StorageUnavailable("the job queue failed (status 503); retry later")
        return await super().receive(max_jobs, visibility_seconds)


async def test_a_worker_rides_out_a_queue_outage_and_then_processes_the_waiting_jobs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stores, ledger = memory_stores(), Ledger()
    jobs = JobQueues(documents=UnreachableAtFirst(outage=3), digests=InProcessJobQueue())
    async with process(stores, jobs) as web:
        (uploaded,) = await web.foundation.context_documents.add(
            ACME, ORG, [Upload("a.txt", b"Alpha.")], wait_seconds=0
        )
        async with running_workers(stores, jobs, ledger, 1):
            await until(lambda: _all_ready(web))

    assert ledger.completions(uploaded.record.document_id) == 1
    assert caplog.text.count("receiving process jobs failed: StorageUnavailable") == 3
    assert "503" not in caplog.text
