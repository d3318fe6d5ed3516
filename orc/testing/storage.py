"""Store wrappers that let a test or benchmark observe every storage call (count it, time it, fail it).

Each wrapped call runs inside ``observe("<collection>.<operation>")`` (``"blobs.<operation>"`` for the blob
store), a context manager supplied by the caller: it may record the call, time it, or raise to inject a fault
before the call reaches the inner store. :func:`unique_name` names a fresh collection or container.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from orc.storage.ports import BlobInfo, BlobStore, CollectionProvider, DocumentCollection, JsonScalar, StoredItem


def unique_name(prefix: str = "t") -> str:
    """A fresh collection or container name (lower-case, valid for every backend)."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"


Observer = Callable[[str], AbstractContextManager[object]]
"""Called with the call's name; the call runs inside the context manager it returns."""


class ObservedCollection:
    """A :class:`DocumentCollection` whose every call runs inside ``observe``."""

    def __init__(self, inner: DocumentCollection, observe: Observer, name: str) -> None:
        self._inner = inner
        self._observe = observe
        self._name = name

    async def get(self, partition_key: str, item_id: str) -> StoredItem | None:
        """Delegate ``get``."""
        with self._observe(f"{self._name}.get"):
            return await self._inner.get(partition_key, item_id)

    async def create(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        """Delegate ``create``."""
        with self._observe(f"{self._name}.create"):
            return await self._inner.create(partition_key, item_id, body)

    async def replace(
        self, partition_key: str, item_id: str, body: Mapping[str, Any], *, if_match: str | None = None
    ) -> StoredItem:
        """Delegate ``replace``."""
        with self._observe(f"{self._name}.replace"):
            return await self._inner.replace(partition_key, item_id, body, if_match=if_match)

    async def upsert(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        """Delegate ``upsert``."""
        with self._observe(f"{self._name}.upsert"):
            return await self._inner.upsert(partition_key, item_id, body)

    async def delete(self, partition_key: str, item_id: str, *, if_match: str | None = None) -> bool:
        """Delegate ``delete``."""
        with self._observe(f"{self._name}.delete"):
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
        """Delegate ``query``."""
        with self._observe(f"{self._name}.query"):
            return await self._inner.query(
                partition_key, where=where, id_prefix=id_prefix, order_by=order_by, descending=descending, limit=limit
            )


class ObservedProvider:
    """A :class:`CollectionProvider` handing out observed collections (getting one is not a call)."""

    def __init__(self, inner: CollectionProvider, observe: Observer) -> None:
        self._inner = inner
        self._observe = observe

    async def collection(self, name: str) -> DocumentCollection:
        """The inner provider's collection, observed."""
        return ObservedCollection(await self._inner.collection(name), self._observe, name)

    async def aclose(self) -> None:
        """Close the inner provider."""
        await self._inner.aclose()


class ObservedBlobStore:
    """A :class:`BlobStore` whose every call runs inside ``observe`` as ``blobs.<operation>``."""

    def __init__(self, inner: BlobStore, observe: Observer) -> None:
        self._inner = inner
        self._observe = observe

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
        """Delegate ``put``."""
        with self._observe("blobs.put"):
            return await self._inner.put(
                name, data, content_type=content_type, metadata=metadata, if_match=if_match, if_none_match=if_none_match
            )

    async def get(self, name: str) -> tuple[bytes, BlobInfo]:
        """Delegate ``get``."""
        with self._observe("blobs.get"):
            return await self._inner.get(name)

    async def head(self, name: str) -> BlobInfo | None:
        """Delegate ``head``."""
        with self._observe("blobs.head"):
            return await self._inner.head(name)

    async def list(self, prefix: str) -> Sequence[BlobInfo]:
        """Delegate ``list``."""
        with self._observe("blobs.list"):
            return await self._inner.list(prefix)

    async def delete(self, name: str) -> bool:
        """Delegate ``delete``."""
        with self._observe("blobs.delete"):
            return await self._inner.delete(name)

    async def aclose(self) -> None:
        """Close the inner store."""
        await self._inner.aclose()
