"""The one read-modify-write helper: a lost race reads and changes again, a change may decline, and a counter that
never stops being contended is refused as busy rather than retried for ever."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from orc.errors import StorageUnavailable
from orc.storage import MemoryCollectionProvider, StoredItem
from orc.storage.memory import MemoryCollection
from orc.storage.updates import update_item


async def counters() -> MemoryCollection:
    return await MemoryCollectionProvider().collection("quotas")


def plus_one(item: StoredItem | None) -> dict[str, Any]:
    return {"count": (item.body["count"] if item else 0) + 1}


async def test_an_absent_item_is_created_and_a_present_one_replaced() -> None:
    collection = await counters()

    first = await update_item(collection, "p", "c", plus_one, busy="busy")
    second = await update_item(collection, "p", "c", plus_one, busy="busy")

    assert first is not None and first.body == {"count": 1}
    assert second is not None and second.body == {"count": 2}


async def test_concurrent_writers_each_count_once() -> None:
    collection = await counters()

    await asyncio.gather(*(update_item(collection, "p", "c", plus_one, busy="busy") for _ in range(25)))

    stored = await collection.get("p", "c")
    assert stored is not None and stored.body == {"count": 25}


async def test_a_change_that_declines_writes_nothing() -> None:
    collection = await counters()

    assert await update_item(collection, "p", "c", lambda item: None, busy="busy") is None
    assert await collection.get("p", "c") is None


async def test_a_write_lost_to_another_writer_is_decided_again_on_a_fresh_read() -> None:
    collection = await counters()
    await collection.create("p", "c", {"count": 1})
    seen: list[int] = []

    async def interfere() -> None:
        stale = await collection.get("p", "c")
        assert stale is not None
        await collection.replace("p", "c", {"count": 10}, if_match=stale.etag)

    def change(item: StoredItem | None) -> dict[str, Any]:
        assert item is not None
        seen.append(item.body["count"])
        return {"count": item.body["count"] + 1}

    stale = await collection.get("p", "c")
    await interfere()
    stored = await update_item(collection, "p", "c", change, busy="busy", current=stale)

    assert seen == [1, 10]
    assert stored is not None and stored.body == {"count": 11}


class AlwaysOvertaken(MemoryCollection):
    """A collection where another writer changes an item just before each conditional replace."""

    async def replace(
        self, partition_key: str, item_id: str, body: Mapping[str, Any], *, if_match: str | None = None
    ) -> StoredItem:
        current = await self.get(partition_key, item_id)
        assert current is not None
        await super().replace(partition_key, item_id, {"count": -1}, if_match=current.etag)
        return await super().replace(partition_key, item_id, body, if_match=if_match)


async def test_an_item_overtaken_on_every_attempt_is_refused_as_busy_with_a_retry_after() -> None:
    collection = AlwaysOvertaken("quotas")
    await collection.create("p", "c", {"count": 0})

    with pytest.raises(StorageUnavailable, match="too busy") as refused:
        await update_item(collection, "p", "c", plus_one, busy="too busy", attempts=3)

    assert refused.value.retry_after == 1
