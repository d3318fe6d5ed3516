"""Uploads and processing a crash interrupted are resumed or failed, bounded in time, on any instance (issue 14 §9).

A process killed mid-way leaves a record ``uploading``/``processing`` and a lease nobody renews; the next sweep
(the restarted process, or another instance sharing the store) finds the lapsed lease and settles the document.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest

from orc.composition import build_runtime
from orc.composition.foundation import parts_of
from orc.composition.tuning import Tuning
from orc.documents.intake.leases import ProcessingLeases
from orc.documents.intake.processing import DocumentLocation, DocumentProcessor, ProcessingJob
from orc.documents.intake.recovery import INTERRUPTED_UPLOAD, MAX_TAKE_OVERS, DocumentRecovery
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.documents.sessions.locations import session_location
from orc.principal import LOCAL_PRINCIPAL
from orc.search.memory import MemorySearchEngine
from orc.search.retriever import Retriever
from orc.search.text_store import TextStore
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from tests.documents.library_support import extraction_pool

REPO = Path(__file__).resolve().parents[2]
TEXT = b"The warranty lasts two years from the date of purchase.\n\n"


class Clock:
    """Seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Store:
    """Real memory stores, a processor and its leases, as one process of a deployment sees them."""

    def __init__(self, clock: Clock, provider: MemoryCollectionProvider, blobs: MemoryBlobStore) -> None:
        self.provider, self.blobs, self.clock = provider, blobs, clock

    async def process(self) -> tuple[DocumentProcessor, DocumentRecovery, ProcessingLeases]:
        catalog = await self.provider.collection("catalog")
        leases = ProcessingLeases(
            await self.provider.collection("processing_leases"),
            lease_seconds=Tuning().processing_lease_seconds,
            clock=self.clock,
        )
        texts = TextStore(await self.provider.collection("document_text"))
        processor = DocumentProcessor(
            catalog,
            self.blobs,
            texts,
            Retriever(MemorySearchEngine(), texts),
            max_document_bytes=Settings().max_upload_bytes,
            leases=leases,
            extraction_pool=extraction_pool(),
        )
        return processor, DocumentRecovery(leases, catalog, self.blobs, processor), leases


def job_for(data: bytes, name: str = "warranty.txt") -> ProcessingJob:
    location = DocumentLocation("org|ctx", f"item-{name}", f"doc-{name}", f"docs/{name}", name)
    return ProcessingJob(location, hashlib.sha256(data).hexdigest(), "text/plain")


async def left_by_a_crash(store: Store, job: ProcessingJob, *, status: str, blob: bytes | None) -> None:
    """What a process killed mid-upload leaves: its lease, the record, and the blob if it got that far."""
    _, _, leases = await store.process()
    await leases.hold(job)
    catalog = await store.provider.collection("catalog")
    body = {"document_id": job.location.document_id, "content_hash": job.content_hash, "status": status}
    await catalog.upsert(job.location.partition_key, job.location.item_id, body)
    if blob is not None:
        await store.blobs.put(job.location.blob_path, blob, metadata={"sha256": hashlib.sha256(blob).hexdigest()})


async def status_of(store: Store, job: ProcessingJob) -> tuple[str, str | None]:
    item = await (await store.provider.collection("catalog")).get(job.location.partition_key, job.location.item_id)
    assert item is not None
    return item.body["status"], item.body.get("status_reason")


@pytest.fixture
def store() -> Store:
    return Store(Clock(), MemoryCollectionProvider(), MemoryBlobStore())


async def test_processing_a_crash_interrupted_is_resumed_once_its_lease_lapses(store: Store) -> None:
    job = job_for(TEXT)
    await left_by_a_crash(store, job, status="processing", blob=TEXT)
    processor, recovery, _ = await store.process()

    assert await recovery.sweep() == []  # the lease still holds: its holder may be alive
    store.clock.now += 31
    resumed = await recovery.sweep()
    results = await asyncio.gather(*resumed)

    assert [result.outcome for result in results] == ["ready"]
    assert await status_of(store, job) == ("ready", None)
    assert await recovery.sweep() == []  # settled: the lease is gone
    await processor.aclose()


async def test_an_upload_cut_before_its_file_was_stored_ends_failed_with_a_reason(store: Store) -> None:
    job = job_for(TEXT)
    await left_by_a_crash(store, job, status="uploading", blob=None)
    _, recovery, _ = await store.process()
    store.clock.now += 31

    assert await recovery.sweep() == []

    assert await status_of(store, job) == ("failed", INTERRUPTED_UPLOAD)


async def test_an_upload_cut_while_its_file_was_written_ends_failed(store: Store) -> None:
    job = job_for(TEXT)
    await left_by_a_crash(store, job, status="uploading", blob=TEXT[:10])  # other bytes than the record says
    _, recovery, _ = await store.process()
    store.clock.now += 31

    await recovery.sweep()

    assert await status_of(store, job) == ("failed", INTERRUPTED_UPLOAD)


async def test_a_document_whose_processing_keeps_being_interrupted_ends_failed_instead_of_retried_forever(
    store: Store,
) -> None:
    job = job_for(TEXT)
    await left_by_a_crash(store, job, status="processing", blob=TEXT)
    _, _, leases = await store.process()
    for _ in range(MAX_TAKE_OVERS):
        store.clock.now += 31
        (lapsed,) = await leases.lapsed()
        assert await leases.take_over(lapsed) is not None  # each time a process took it and died
    _, recovery, _ = await store.process()
    store.clock.now += 31

    assert await recovery.sweep() == []

    status, reason = await status_of(store, job)
    assert status == "failed" and reason is not None and "interrupted" in reason


async def test_two_instances_sweeping_at_once_resume_an_interrupted_document_once(store: Store) -> None:
    job = job_for(TEXT)
    await left_by_a_crash(store, job, status="processing", blob=TEXT)
    first_processor, first, _ = await store.process()
    second_processor, second, _ = await store.process()
    store.clock.now += 31

    resumed = await asyncio.gather(first.sweep(), second.sweep())

    assert sorted(len(tasks) for tasks in resumed) == [0, 1]
    await asyncio.gather(*resumed[0], *resumed[1])
    assert await status_of(store, job) == ("ready", None)
    await first_processor.aclose()
    await second_processor.aclose()


async def test_a_lease_of_a_document_replaced_or_deleted_since_is_dropped_without_work(store: Store) -> None:
    job = job_for(TEXT)
    await left_by_a_crash(store, job, status="processing", blob=TEXT)
    catalog = await store.provider.collection("catalog")
    await catalog.delete(job.location.partition_key, job.location.item_id)
    _, recovery, leases = await store.process()
    store.clock.now += 31

    assert await recovery.sweep() == []
    assert await leases.lapsed() == []


async def test_finished_uploads_leave_no_lease_behind(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", model="offline", storage="embedded", auth="none")
    async with build_runtime(settings) as services:
        folder = ContextRef("folder", "legal")
        await services.foundation.directory.put(LOCAL_PRINCIPAL, folder, "Legal", None)
        (added,) = await services.foundation.context_documents.add(
            LOCAL_PRINCIPAL, folder, [upload("warranty.txt", TEXT)], wait_seconds=30
        )
        leases = await parts_of(services.foundation).stores.collections.collection("processing_leases")

        assert added.record.status == "ready"
        assert await leases.query("leases") == []


def upload(name: str, data: bytes) -> Upload:
    return Upload(name, data)


CRASHING_UPLOAD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from orc.composition import build_runtime
    from orc.documents.records import ContextRef
    from orc.documents.intake.uploads import Upload
    from orc.principal import LOCAL_PRINCIPAL
    from orc.composition.tuning import Tuning
    from orc.settings import Settings

    async def main() -> None:
        settings = Settings(home=Path(sys.argv[1]), model="offline", storage="embedded", auth="none")
        async with build_runtime(settings, tuning=Tuning(processing_lease_seconds=2)) as services:
            folder = ContextRef("folder", "legal")
            await services.foundation.directory.put(LOCAL_PRINCIPAL, folder, "Legal", None)
            big = b"".join(b"Clause %d: the tenant keeps the garden tidy and pays on time.\\n\\n" % n
                           for n in range(120_000))
            await services.foundation.context_documents.add(
                LOCAL_PRINCIPAL, folder, [Upload("big.txt", big)], wait_seconds=0)
            print("stored", flush=True)
            await asyncio.Event().wait()  # killed while the document is processing

    asyncio.run(main())
    """
)


async def test_a_process_killed_while_processing_an_upload_leaves_nothing_stuck_after_a_restart(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CRASHING_UPLOAD,
        str(home),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), timeout=240)  # bounds a child that hangs
        assert line.strip() == b"stored"
    finally:
        child.send_signal(signal.SIGKILL)  # no shutdown code runs: what a crash leaves
        await asyncio.wait_for(child.wait(), timeout=30)

    settings = Settings(home=home, model="offline", storage="embedded", auth="none")
    async with build_runtime(settings, tuning=Tuning(processing_sweep_seconds=0.2)) as services:
        folder = ContextRef("folder", "legal")
        (left,) = await services.foundation.context_documents.documents(LOCAL_PRINCIPAL, folder)
        assert left.status in ("uploading", "processing")  # what the kill left
        deadline = time.monotonic() + 200  # a bound for a document never resumed, not a wait
        status = left.status
        while status != "ready" and time.monotonic() < deadline:
            await asyncio.sleep(0.2)  # poll interval
            (record,) = await services.foundation.context_documents.documents(LOCAL_PRINCIPAL, folder)
            status = record.status

    assert status == "ready"


async def test_a_session_file_resumed_after_a_crash_gets_its_digest_made(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", model="offline", storage="embedded", auth="none")
    async with build_runtime(settings, tuning=Tuning(processing_sweep_seconds=3600)) as services:
        await services.foundation.session_files.add(LOCAL_PRINCIPAL, "c1", [upload("warranty.txt", TEXT)])
        assert await services.documents.digests.wait_idle(LOCAL_PRINCIPAL, "c1", 120)
        (record,) = (await services.foundation.session_files.manifest(LOCAL_PRINCIPAL, "c1")).files
        location = session_location(LOCAL_PRINCIPAL, "c1", record)
        # What a process killed while processing the file leaves: the record mid-way and a lease nobody renews.
        catalog = await parts_of(services.foundation).stores.collections.collection("catalog")
        item = await catalog.get(location.partition_key, location.item_id)
        assert item is not None
        await catalog.replace(
            location.partition_key,
            location.item_id,
            {**item.body, "status": "processing", "digest_status": "parsing"},
        )
        lapsed = ProcessingLeases(
            await parts_of(services.foundation).stores.collections.collection("processing_leases"), lease_seconds=-1
        )
        await lapsed.hold(ProcessingJob(location, record.content_hash, "text/plain"))

        resumed = await services.documents.recovery.sweep()
        await asyncio.gather(*resumed)
        assert await services.documents.digests.wait_idle(LOCAL_PRINCIPAL, "c1", 120)
        (after,) = (await services.documents.context_files.manifest(LOCAL_PRINCIPAL, "c1")).files

    assert len(resumed) == 1
    assert (after.status, after.digest_status) == ("ready", "ready")


async def test_an_older_job_renewing_its_lease_never_takes_it_from_a_newer_upload_of_the_document(
    store: Store,
) -> None:
    older, newer = job_for(TEXT), job_for(TEXT + b"A new clause.\n")
    _, _, leases = await store.process()
    await leases.hold(older)
    await leases.hold(newer)  # the document was uploaded again while the first version was processing

    await leases.renew(older)
    store.clock.now += 31
    (lapsed,) = await leases.lapsed()

    assert lapsed.job.content_hash == newer.content_hash
