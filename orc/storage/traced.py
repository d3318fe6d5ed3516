"""Storage wrappers that put one span around each storage call (applied by the composition root when tracing).

Spans name the operation and the collection, and carry sizes and outcomes only: never partition keys (they hold
organization and user ids), item ids, blob names or bodies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orc.storage.ports import BlobInfo, BlobStore, CollectionProvider, DocumentCollection, JsonScalar, StoredItem
from orc.telemetry import span


class TracedCollectionProvider:
    """A :class:`CollectionProvider` whose collections trace every call."""

    def __init__(self, inner: CollectionProvider) -> None:
        self.inner = inner

    async def collection(self, name: str) -> DocumentCollection:
        """The named collection, traced."""
        return TracedCollection(await self.inner.collection(name), name)

    async def aclose(self) -> None:
        """Close the wrapped provider."""
        await self.inner.aclose()


class TracedCollection:
    """One collection, each call in a ``storage.<operation>`` span."""

    def __init__(self, inner: DocumentCollection, name: str) -> None:
        self.inner = inner
        self._attributes = {"db.collection.name": name}

    async def get(self, partition_key: str, item_id: str) -> StoredItem | None:
        """Traced ``get``."""
        with span("storage.get", self._attributes, leaf=True) as current:
            item = await self.inner.get(partition_key, item_id)
            current.set_attribute("orc.storage.found", item is not None)
            return item

    async def create(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        """Traced ``create``."""
        with span("storage.create", self._attributes, leaf=True):
            return await self.inner.create(partition_key, item_id, body)

    async def replace(
        self, partition_key: str, item_id: str, body: Mapping[str, Any], *, if_match: str | None = None
    ) -> StoredItem:
        """Traced ``replace``."""
        with span("storage.replace", {**self._attributes, "orc.storage.conditional": if_match is not None}, leaf=True):
            return await self.inner.replace(partition_key, item_id, body, if_match=if_match)

    async def upsert(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        """Traced ``upsert``."""
        with span("storage.upsert", self._attributes, leaf=True):
            return await self.inner.upsert(partition_key, item_id, body)

    async def delete(self, partition_key: str, item_id: str, *, if_match: str | None = None) -> bool:
        """Traced ``delete``."""
        with span("storage.delete", self._attributes, leaf=True):
            return await self.inner.delete(partition_key, item_id, if_match=if_match)

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
        """Traced ``query``."""
        with span("storage.query", self._attributes, leaf=True) as current:
            items = await self.inner.query(
                partition_key, where=where, id_prefix=id_prefix, order_by=order_by, descending=descending, limit=limit
            )
            current.set_attribute("orc.storage.items", len(items))
            return items


class TracedBlobStore:
    """A :class:`BlobStore`, each call in a ``blob.<operation>`` span with the byte count."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner

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
        """Traced ``put``."""
        with span("blob.put", {"orc.blob.bytes": len(data)}, leaf=True):
            return await self.inner.put(
                name, data, content_type=content_type, metadata=metadata, if_match=if_match, if_none_match=if_none_match
            )

    async def get(self, name: str) -> tuple[bytes, BlobInfo]:
        """Traced ``get``."""
        with span("blob.get", leaf=True) as current:
            data, info = await self.inner.get(name)
            current.set_attribute("orc.blob.bytes", len(data))
            return data, info

    async def head(self, name: str) -> BlobInfo | None:
        """Traced ``head``."""
        with span("blob.head", leaf=True):
            return await self.inner.head(name)

    async def list(self, prefix: str) -> Sequence[BlobInfo]:
        """Traced ``list``."""
        with span("blob.list", leaf=True):
            return await self.inner.list(prefix)

    async def delete(self, name: str) -> bool:
        """Traced ``delete``."""
        with span("blob.delete", leaf=True):
            return await self.inner.delete(name)

    async def aclose(self) -> None:
        """Close the wrapped store."""
        await self.inner.aclose()
