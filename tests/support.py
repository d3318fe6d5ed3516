"""Real in-memory stores wrapped to count calls, for tests that assert "no storage call was made"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orc.composition import Stores
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.storage.ports import BlobInfo, BlobStore, DocumentCollection, JsonScalar, StoredItem


class CallCounter:
    """Counts storage calls across every wrapped store, and injects faults into chosen calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._faults: dict[str, tuple[Exception, int | None]] = {}

    def reset(self) -> None:
        self.calls.clear()

    def fail(self, call: str, error: Exception, *, times: int | None = None) -> None:
        """Make ``call`` (e.g. ``"conversations.create"``) raise ``error``, ``times`` times or forever."""
        self._faults[call] = (error, times)

    def record(self, call: str) -> None:
        self.calls.append(call)
        fault = self._faults.get(call)
        if fault is None:
            return
        error, times = fault
        if times is not None:
            if times <= 1:
                del self._faults[call]
            else:
                self._faults[call] = (error, times - 1)
        raise error


class CountingCollection:
    """A DocumentCollection that records each call before delegating."""

    def __init__(self, inner: DocumentCollection, counter: CallCounter, name: str) -> None:
        self._inner = inner
        self._counter = counter
        self._name = name

    def _note(self, op: str) -> None:
        self._counter.record(f"{self._name}.{op}")

    async def get(self, partition_key: str, item_id: str) -> StoredItem | None:
        self._note("get")
        return await self._inner.get(partition_key, item_id)

    async def create(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        self._note("create")
        return await self._inner.create(partition_key, item_id, body)

    async def replace(
        self, partition_key: str, item_id: str, body: Mapping[str, Any], *, if_match: str | None = None
    ) -> StoredItem:
        self._note("replace")
        return await self._inner.replace(partition_key, item_id, body, if_match=if_match)

    async def upsert(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        self._note("upsert")
        return await self._inner.upsert(partition_key, item_id, body)

    async def delete(self, partition_key: str, item_id: str, *, if_match: str | None = None) -> bool:
        self._note("delete")
        return await self._inner.delete(partition_key, item_id, if_match=if_match)

    async def query(
        self,
        partition_key: str,
        *,
        where: Mapping[str, JsonScalar] | None = None,
        id_prefix: str | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
    ) -> list[StoredItem]:
        self._note("query")
        return await self._inner.query(
            partition_key, where=where, id_prefix=id_prefix, order_by=order_by, descending=descending, limit=limit
        )


class CountingProvider:
    """Hands out counting wrappers of a memory provider's collections."""

    def __init__(self, counter: CallCounter) -> None:
        self._inner = MemoryCollectionProvider()
        self._counter = counter

    async def collection(self, name: str) -> DocumentCollection:
        return CountingCollection(await self._inner.collection(name), self._counter, name)

    async def aclose(self) -> None:
        await self._inner.aclose()


class CountingBlobStore:
    """A BlobStore that records each call before delegating to a memory blob store."""

    def __init__(self, counter: CallCounter, inner: BlobStore | None = None) -> None:
        self._inner = inner or MemoryBlobStore()
        self._counter = counter

    async def put(
        self,
        name: str,
        data: bytes,
        *,
        content_type: str = "application/octet-stream",
        metadata: Mapping[str, str] | None = None,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> BlobInfo:
        self._counter.record("blobs.put")
        return await self._inner.put(
            name, data, content_type=content_type, metadata=metadata, if_match=if_match, if_none_match=if_none_match
        )

    async def get(self, name: str) -> tuple[bytes, BlobInfo]:
        self._counter.record("blobs.get")
        return await self._inner.get(name)

    async def head(self, name: str) -> BlobInfo | None:
        self._counter.record("blobs.head")
        return await self._inner.head(name)

    async def list(self, prefix: str) -> Sequence[BlobInfo]:
        self._counter.record("blobs.list")
        return await self._inner.list(prefix)

    async def delete(self, name: str) -> bool:
        self._counter.record("blobs.delete")
        return await self._inner.delete(name)

    async def aclose(self) -> None:
        await self._inner.aclose()


def counting_stores() -> tuple[Stores, CallCounter]:
    """Memory stores whose every call is counted."""
    counter = CallCounter()
    return Stores(collections=CountingProvider(counter), blobs=CountingBlobStore(counter)), counter
