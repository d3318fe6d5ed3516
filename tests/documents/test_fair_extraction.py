"""Extraction is fair across organizations and bounded in time (issue 25 item 3): one organization's backlog or
slow document never holds another organization's documents behind it, and a document past
``ORC_EXTRACTION_SECONDS`` fails with the reason while its worker is replaced."""

from __future__ import annotations

import asyncio
import functools

import pytest

from orc.composition import Stores, build_runtime
from orc.documents.intake.uploads import Upload
from orc.documents.parsing.fair_turns import FairTurns
from orc.documents.records import ContextRef
from orc.errors import ExtractionError
from orc.principal import Principal
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from tests.documents.gates import GatedBlobStore
from tests.documents.library_support import ACME, extraction_pool, ready_to_parse_at_full_priority
from tests.documents.pdf_factory import make_pdf

GLOBEX = Principal(organization="globex", user="bob")


async def test_a_freed_slot_goes_to_the_organization_that_waited_not_to_the_backlog() -> None:
    turns = FairTurns(1)
    order: list[str] = []
    first = asyncio.Event()

    async def work(organization: str, name: str, hold: asyncio.Event | None = None) -> None:
        async with turns.turn(organization):
            order.append(name)
            if hold is not None:
                await hold.wait()

    running = asyncio.create_task(work("acme", "a1", first))
    await asyncio.sleep(0)  # one step of the loop: a1 takes the slot before the others queue
    backlog = [asyncio.create_task(work("acme", f"a{n}")) for n in range(2, 6)]
    other = asyncio.create_task(work("globex", "g1"))
    await asyncio.sleep(0)  # one step: every task runs up to its wait for a slot
    assert turns.waiting == 5
    first.set()
    await asyncio.gather(running, *backlog, other)

    assert order == ["a1", "g1", "a2", "a3", "a4", "a5"]


async def test_two_organizations_take_turns_when_both_have_a_backlog() -> None:
    turns = FairTurns(1)
    order: list[str] = []
    gate = asyncio.Event()

    async def work(organization: str, name: str) -> None:
        async with turns.turn(organization):
            order.append(name)
            await gate.wait()

    tasks = [asyncio.create_task(work("acme", f"a{n}")) for n in range(1, 4)]
    tasks += [asyncio.create_task(work("globex", f"g{n}")) for n in range(1, 4)]
    await asyncio.sleep(0)  # one step: every task runs up to its wait for a slot
    assert turns.waiting == 5
    gate.set()
    await asyncio.gather(*tasks)

    assert order == ["a1", "g1", "a2", "g2", "a3", "g3"]


async def test_a_cancelled_waiter_gives_up_its_place_and_the_slot_still_passes_on() -> None:
    turns = FairTurns(1)
    gate = asyncio.Event()
    order: list[str] = []

    async def work(organization: str, name: str) -> None:
        async with turns.turn(organization):
            order.append(name)
            await gate.wait()

    holder = asyncio.create_task(work("acme", "a1"))
    await asyncio.sleep(0)  # one step of the loop: a1 takes the slot
    gone = asyncio.create_task(work("globex", "g1"))
    after = asyncio.create_task(work("initech", "i1"))
    await asyncio.sleep(0)  # one step: every task runs up to its wait for a slot
    assert turns.waiting == 2
    gone.cancel()
    gate.set()
    await asyncio.gather(holder, after)

    assert order == ["a1", "i1"] and gone.cancelled() and turns.waiting == 0


async def test_another_organizations_upload_is_processed_before_a_backlog_queued_ahead_of_it() -> None:
    blobs = GatedBlobStore()
    folder = ContextRef("organization", "acme")
    theirs = ContextRef("organization", "globex")
    finished: list[str] = []

    def done(name: str, _: object) -> None:
        finished.append(name)

    async with build_runtime(Settings(), stores=Stores(MemoryCollectionProvider(), blobs)) as runtime:
        library = runtime.foundation.context_documents
        blobs.gets.close()  # every job waits inside its slot until the gate opens: the backlog builds up
        jobs = []
        for n in range(8):
            (doc,) = await library.add(ACME, folder, [Upload(f"a{n}.txt", f"Acme note {n}.".encode())], wait_seconds=0)
            jobs.append((f"a{n}", doc.job))
        (doc,) = await library.add(GLOBEX, theirs, [Upload("g.txt", b"Globex note.")], wait_seconds=0)
        jobs.append(("g", doc.job))
        for name, job in jobs:
            assert job is not None
            job.add_done_callback(functools.partial(done, name))
        blobs.gets.open()
        await asyncio.gather(*(job for _, job in jobs if job is not None))

    # Two slots: the two acme documents already running finish first, then globex's goes next.
    assert finished.index("g") <= 3, finished


async def test_a_document_past_its_deadline_fails_with_the_reason_and_the_next_gets_a_fresh_worker() -> None:
    # About 10 s of parsing on an idle machine; the deadline leaves room for a loaded one's first parse (imports).
    slow = make_pdf([[f"line {line} of page {page}, with a few words" for line in range(40)] for page in range(6000)])
    quick = make_pdf([["The rent is 900 euros."]])
    pool = extraction_pool(1, Settings(extraction_seconds=3.0), initializer=ready_to_parse_at_full_priority)
    try:
        await pool.extract(quick, "warm.pdf", None)  # starts the worker: not part of the deadline under test
        with pytest.raises(ExtractionError) as refused:
            await pool.extract(slow, "slow.pdf", None, organization="acme")
        after = await pool.extract(quick, "after.pdf", None, organization="globex")
    finally:
        await pool.aclose()

    assert refused.value.code == "extraction_timeout" and "took longer than 3 s" in refused.value.message
    assert "900 euros" in after.text and not pool.in_threads


async def test_one_organization_never_takes_the_spare_slot_and_another_takes_it_at_once() -> None:
    turns = FairTurns(2, spare=1)
    gate = asyncio.Event()
    running: list[str] = []

    async def work(organization: str, name: str) -> None:
        async with turns.turn(organization):
            running.append(name)
            await gate.wait()

    acme = [asyncio.create_task(work("acme", f"a{n}")) for n in range(1, 5)]
    await asyncio.sleep(0)  # one step: every task runs up to its slot or its wait
    alone, queued = list(running), turns.waiting
    other = asyncio.create_task(work("globex", "g1"))
    await asyncio.sleep(0)
    with_other = list(running)
    gate.set()
    await asyncio.gather(*acme, other)

    assert alone == ["a1", "a2"] and queued == 2
    assert with_other == ["a1", "a2", "g1"]
