"""One organization's slow documents never hold another organization's: while they keep every extraction worker
and processing slot busy, another organization's document is parsed and ready at once, in a spare that the busy
organization cannot take.

Before: another organization's one-page DOCX waited 53.6 s behind one slow PDF and 104.7 s behind four — the
processing slots, all held by the slow organization's documents waiting for the one worker, made it wait for one
extraction deadline, and the worker for another."""

from __future__ import annotations

import asyncio
import threading

from orc.composition import Stores, build_runtime
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.errors import ExtractionError
from orc.principal import Principal
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from orc.storage.ports import BlobInfo
from tests.documents.gates import GatedBlobStore
from tests.documents.library_support import extraction_pool

ACME = Principal(organization="acme", user="ann")
GLOBEX = Principal(organization="globex", user="bob")
WAIT_SECONDS = 60.0
"""A bound for what should happen at once, not a wait."""


def held_parse(started: threading.Semaphore, release: threading.Event) -> str:
    """A parse that runs until released, as a slow document does until its deadline."""
    started.release()
    release.wait(WAIT_SECONDS)
    return "slow"


def quick_parse() -> str:
    return "quick"


async def test_another_organizations_document_is_parsed_while_one_organization_holds_every_worker() -> None:
    pool = extraction_pool(0, Settings(extraction_seconds=WAIT_SECONDS * 2))  # threads: the same turns as workers
    started, release = threading.Semaphore(0), threading.Event()
    failed = ExtractionError("failed", code="extraction_timeout")
    slow = [
        asyncio.create_task(
            pool.run(held_parse, started, release, organization="acme", overdue=failed, over_memory=failed)
        )
        for _ in range(4)
    ]
    try:
        for _ in range(2):  # every thread the pool has (two) is busy with acme's documents
            assert await asyncio.to_thread(started.acquire, timeout=WAIT_SECONDS)
        async with asyncio.timeout(WAIT_SECONDS):
            theirs = await pool.run(quick_parse, organization="globex", overdue=failed, over_memory=failed)
        acme_still_parsing = not any(task.done() for task in slow)
    finally:
        release.set()
        await asyncio.gather(*slow)

    assert theirs == "quick"
    assert acme_still_parsing


class HeldOrganization(GatedBlobStore):
    """Blob reads of one organization's documents wait at the gate (its processing jobs hold their slots there, as
    slow documents do); other organizations' pass."""

    def __init__(self, organization: str) -> None:
        super().__init__()
        self.prefix = organization + "/"

    async def get(self, name: str) -> tuple[bytes, BlobInfo]:
        if name.startswith(self.prefix):
            await self.gets.pass_through()
        return await self.inner.get(name)


async def test_another_organizations_upload_is_ready_while_one_organizations_documents_hold_every_slot() -> None:
    blobs = HeldOrganization("acme")
    async with build_runtime(Settings(), stores=Stores(MemoryCollectionProvider(), blobs)) as runtime:
        library = runtime.foundation.context_documents
        blobs.gets.close()
        held = []
        for n in range(4):
            upload = Upload(f"slow-{n}.txt", f"Acme report {n}.".encode())
            (document,) = await library.add(ACME, ContextRef("organization", "acme"), [upload], wait_seconds=0)
            held.append(document.job)
        await blobs.gets.reached.wait()
        (theirs,) = await library.add(
            GLOBEX, ContextRef("organization", "globex"), [Upload("memo.txt", b"Globex memo.")], wait_seconds=0
        )
        assert theirs.job is not None
        async with asyncio.timeout(WAIT_SECONDS):
            result = await theirs.job
        acme_waiting = not any(job is not None and job.done() for job in held)
        blobs.gets.open()
        await asyncio.gather(*(job for job in held if job is not None))

    assert result.outcome == "ready"
    assert acme_waiting
