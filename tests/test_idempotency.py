"""Idempotency-Key records: replay, reuse, in-flight, expiry, a dead request's lease, and the sweep."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from orc.errors import IdempotencyKeyInFlight, IdempotencyKeyReused, InvalidInput
from orc.idempotency import Claim, IdempotencyKeys, StoredResponse, fingerprint
from orc.principal import Principal
from orc.storage.memory import MemoryCollectionProvider

ALICE = Principal(organization="acme", user="alice")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def keys_and_clock() -> tuple[IdempotencyKeys, Clock]:
    clock = Clock()
    collection = await MemoryCollectionProvider().collection("idempotency")
    return IdempotencyKeys(collection, ttl=timedelta(hours=1), lease=timedelta(minutes=5), clock=clock), clock


async def test_a_completed_key_replays_its_response_and_refuses_other_requests() -> None:
    keys, _ = await keys_and_clock()
    claim = await keys.begin(ALICE, "k1", "request-a")
    assert isinstance(claim, Claim)
    await keys.complete(claim, 201, {"revision": 1})

    assert await keys.begin(ALICE, "k1", "request-a") == StoredResponse(201, {"revision": 1}, "application/json")
    with pytest.raises(IdempotencyKeyReused):
        await keys.begin(ALICE, "k1", "request-b")


async def test_a_key_in_flight_is_a_conflict_until_its_lease_runs_out() -> None:
    keys, clock = await keys_and_clock()
    assert isinstance(await keys.begin(ALICE, "k1", "request-a"), Claim)

    with pytest.raises(IdempotencyKeyInFlight):
        await keys.begin(ALICE, "k1", "request-a")
    clock.now += timedelta(minutes=6)  # the first request's process died: its claim can be taken over

    assert isinstance(await keys.begin(ALICE, "k1", "request-a"), Claim)


async def test_an_expired_key_can_be_used_for_a_new_request_and_expired_records_are_swept() -> None:
    clock = Clock()
    collection = await MemoryCollectionProvider().collection("idempotency")
    keys = IdempotencyKeys(collection, ttl=timedelta(hours=1), clock=clock)
    for key in ("old-1", "old-2"):
        claim = await keys.begin(ALICE, key, "request-a")
        assert isinstance(claim, Claim)
        await keys.complete(claim, 201, {})
    clock.now += timedelta(hours=2)

    fresh = await keys.begin(ALICE, "old-1", "request-b")
    second = await keys.begin(ALICE, "new", "request-c")

    assert isinstance(fresh, Claim) and isinstance(second, Claim)
    with pytest.raises(IdempotencyKeyInFlight):
        await keys.begin(ALICE, "old-1", "request-b")
    remaining = await collection.query(ALICE.partition_key)
    assert sorted(item.body["fingerprint"] for item in remaining) == ["request-b", "request-c"]  # old-2 swept


async def test_an_abandoned_claim_frees_the_key_and_malformed_keys_are_refused() -> None:
    keys, _ = await keys_and_clock()
    claim = await keys.begin(ALICE, "k1", "request-a")
    assert isinstance(claim, Claim)
    await keys.abandon(claim)

    assert isinstance(await keys.begin(ALICE, "k1", "request-a"), Claim)
    for bad in ("", "with space", "x" * 256, "naïve"):
        with pytest.raises(InvalidInput):
            await keys.begin(ALICE, bad, "request-a")


def test_a_fingerprint_depends_on_every_part_and_not_on_key_order() -> None:
    assert fingerprint({"a": 1, "b": [1, 2]}) == fingerprint({"b": [1, 2], "a": 1})
    assert fingerprint({"a": 1}) != fingerprint({"a": 2})
