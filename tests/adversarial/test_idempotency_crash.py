"""An Idempotency-Key claimed by a process that crashed blocks its retry for seconds, not ten minutes: the claim's
lease is short and renewed by the live process that holds it."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime, timedelta

import pytest

from orc.errors import IdempotencyKeyInFlight
from orc.idempotency import DEFAULT_LEASE, Claim, IdempotencyKeys, fingerprint
from orc.principal import Principal
from orc.storage.memory import MemoryCollectionProvider
from orc.storage.ports import DocumentCollection

ALICE = Principal(organization="acme", user="alice")
REQUEST = fingerprint({"route": "rename", "title": "x"})


def _claim_in_a_process_that_then_dies(collection: DocumentCollection) -> None:
    """Claim the key on another event loop (another process, as far as the claim can tell), then end that loop
    without completing or abandoning it: a crash."""

    def crashing_process() -> None:
        async def claim() -> None:
            claimed = await IdempotencyKeys(collection).begin(ALICE, "key-1", REQUEST)
            assert isinstance(claimed, Claim)

        runner = asyncio.Runner()
        runner.run(claim())
        runner.close()  # the process is gone: nothing renews its lease any more

    thread = threading.Thread(target=crashing_process)
    thread.start()
    thread.join()


async def test_a_crashed_processs_claim_is_taken_over_once_its_short_lease_passes() -> None:
    collection = await MemoryCollectionProvider().collection("idempotency")
    _claim_in_a_process_that_then_dies(collection)
    just_after = IdempotencyKeys(collection)
    a_lease_later = IdempotencyKeys(collection, clock=lambda: datetime.now(UTC) + DEFAULT_LEASE + timedelta(seconds=1))

    with pytest.raises(IdempotencyKeyInFlight):
        await just_after.begin(ALICE, "key-1", REQUEST)
    retried = await a_lease_later.begin(ALICE, "key-1", REQUEST)

    assert isinstance(retried, Claim)
    assert timedelta(seconds=60) >= DEFAULT_LEASE
    await a_lease_later.abandon(retried)


class SteppedClock:
    """A wall clock that moves only when the test moves it: leases expire by the test's steps, not by how fast a
    busy machine runs the renewals."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_a_live_claim_is_renewed_so_a_retry_still_waits_for_it() -> None:
    collection = await MemoryCollectionProvider().collection("idempotency")
    clock = SteppedClock()
    lease = timedelta(seconds=0.3)
    holder = IdempotencyKeys(collection, lease=lease, clock=clock)
    claimed = await holder.begin(ALICE, "key-1", REQUEST)
    assert isinstance(claimed, Claim)

    async def lease_until() -> str:
        return str((await collection.get(ALICE.partition_key, claimed.item_id)).body["lease_until"])  # type: ignore[union-attr]

    first = await lease_until()
    clock.now += timedelta(seconds=0.2)
    async with asyncio.timeout(60):  # the holder renews every lease / 3 of real time
        while await lease_until() == first:  # noqa: ASYNC110 - a renewal is a storage write with no event
            await asyncio.sleep(0.01)
    renewed = await lease_until()
    clock.now += timedelta(seconds=0.2)  # past the first lease, within the renewed one
    with pytest.raises(IdempotencyKeyInFlight):
        await IdempotencyKeys(collection, lease=lease, clock=clock).begin(ALICE, "key-1", REQUEST)
    await holder.complete(claimed, 200, {"ok": True})
    replayed = await IdempotencyKeys(collection, clock=clock).begin(ALICE, "key-1", REQUEST)

    assert renewed > first
    assert getattr(replayed, "status", None) == 200  # completed with the renewed record's ETag
