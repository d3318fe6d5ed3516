"""In-memory adapters: the reference semantics of both storage ports, for tests and embedded use.

The validation and ordering rules every adapter shares live in :mod:`orc.storage._common`.

Nothing here awaits between reading and writing the state, so each operation is atomic on one event loop
without locks.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from orc.errors import ETagMismatch, ItemAlreadyExists, ItemNotFound
from orc.storage._common import (
    ABSENT,
    check_blob_name,
    check_collection_name,
    check_item_id,
    check_metadata,
    check_partition_key,
    check_put_conditions,
    check_query,
    field_value,
    json_equal,
    new_etag,
    sort_key,
    to_json_object,
)
from orc.storage.ports import BlobInfo, JsonScalar, StoredItem

__all__ = [
    "MemoryBlobStore",
    "MemoryCollection",
    "MemoryCollectionProvider",
]

# --------------------------------------------------------------------------------------------------------------
# Collections.
# --------------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Entry:
    body: dict[str, Any]
    etag: str


class MemoryCollection:
    """A :class:`~orc.storage.ports.DocumentCollection` held in a dict; bodies are copied in and out."""

    def __init__(self, name: str) -> None:
        self.name = check_collection_name(name)
        self._items: dict[tuple[str, str], _Entry] = {}

    @staticmethod
    def _item(partition_key: str, item_id: str, entry: _Entry) -> StoredItem:
        return StoredItem(item_id, partition_key, copy.deepcopy(entry.body), entry.etag)

    async def get(self, partition_key: str, item_id: str) -> StoredItem | None:
        key = (check_partition_key(partition_key), check_item_id(item_id))
        entry = self._items.get(key)
        return None if entry is None else self._item(partition_key, item_id, entry)

    async def create(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        key = (check_partition_key(partition_key), check_item_id(item_id))
        stored = to_json_object(body)
        if key in self._items:
            raise ItemAlreadyExists(f"item {item_id!r} already exists")
        entry = self._items[key] = _Entry(stored, new_etag())
        return self._item(partition_key, item_id, entry)

    async def replace(
        self, partition_key: str, item_id: str, body: Mapping[str, Any], *, if_match: str | None = None
    ) -> StoredItem:
        key = (check_partition_key(partition_key), check_item_id(item_id))
        stored = to_json_object(body)
        current = self._items.get(key)
        if current is None:
            raise ItemNotFound(f"item {item_id!r} does not exist")
        if if_match is not None and current.etag != if_match:
            raise ETagMismatch(f"item {item_id!r} has changed")
        entry = self._items[key] = _Entry(stored, new_etag())
        return self._item(partition_key, item_id, entry)

    async def upsert(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        key = (check_partition_key(partition_key), check_item_id(item_id))
        entry = self._items[key] = _Entry(to_json_object(body), new_etag())
        return self._item(partition_key, item_id, entry)

    async def delete(self, partition_key: str, item_id: str, *, if_match: str | None = None) -> bool:
        key = (check_partition_key(partition_key), check_item_id(item_id))
        current = self._items.get(key)
        if current is None:
            return False
        if if_match is not None and current.etag != if_match:
            raise ETagMismatch(f"item {item_id!r} has changed")
        del self._items[key]
        return True

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
        """Items of one partition; see the port for the contract.

        Without ``order_by`` the items come in id order. With ``order_by`` only items that have the field are
        returned (as Cosmos DB does), ordered by JSON value then id, both in the requested direction, so the
        descending result is exactly the ascending one reversed.
        """
        check_partition_key(partition_key)
        conditions = check_query(where, order_by, limit, id_prefix)
        found = [
            (item_id, entry)
            for (pk, item_id), entry in self._items.items()
            if pk == partition_key
            and (id_prefix is None or item_id.startswith(id_prefix))
            and all(json_equal(field_value(entry.body, f), v) for f, v in conditions.items())
            and (order_by is None or field_value(entry.body, order_by) is not ABSENT)
        ]
        if order_by is None:
            found.sort(key=lambda pair: pair[0], reverse=descending)
        else:
            field = order_by
            found.sort(key=lambda pair: (sort_key(pair[1].body[field]), pair[0]), reverse=descending)
        if limit is not None:
            found = found[:limit]
        return [self._item(partition_key, item_id, entry) for item_id, entry in found]


class MemoryCollectionProvider:
    """A :class:`~orc.storage.ports.CollectionProvider` whose collections live as long as the provider."""

    def __init__(self) -> None:
        self._collections: dict[str, MemoryCollection] = {}

    async def collection(self, name: str) -> MemoryCollection:
        check_collection_name(name)
        found = self._collections.get(name)
        if found is None:
            found = self._collections[name] = MemoryCollection(name)
        return found

    async def aclose(self) -> None:
        """Nothing to release; the data stays readable until the provider is dropped."""


# --------------------------------------------------------------------------------------------------------------
# Blobs.
# --------------------------------------------------------------------------------------------------------------


class MemoryBlobStore:
    """A :class:`~orc.storage.ports.BlobStore` held in a dict of bytes."""

    def __init__(self) -> None:
        self._blobs: dict[str, tuple[bytes, BlobInfo]] = {}

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
        check_blob_name(name)
        check_put_conditions(if_match, if_none_match)
        clean_metadata = check_metadata(metadata)
        payload = bytes(data)
        current = self._blobs.get(name)
        if if_none_match and current is not None:
            raise ItemAlreadyExists(f"blob {name!r} already exists")
        if if_match is not None:
            if current is None:
                raise ItemNotFound(f"blob {name!r} does not exist")
            if current[1].etag != if_match:
                raise ETagMismatch(f"blob {name!r} has changed")
        info = BlobInfo(
            name=name,
            size=len(payload),
            etag=new_etag(),
            content_type=content_type,
            last_modified=datetime.now(UTC),
            metadata=clean_metadata,
        )
        self._blobs[name] = (payload, info)
        return _copy_info(info)

    async def get(self, name: str) -> tuple[bytes, BlobInfo]:
        check_blob_name(name)
        found = self._blobs.get(name)
        if found is None:
            raise ItemNotFound(f"blob {name!r} does not exist")
        return found[0], _copy_info(found[1])

    async def head(self, name: str) -> BlobInfo | None:
        check_blob_name(name)
        found = self._blobs.get(name)
        return None if found is None else _copy_info(found[1])

    async def list(self, prefix: str) -> Sequence[BlobInfo]:
        return [_copy_info(self._blobs[name][1]) for name in sorted(self._blobs) if name.startswith(prefix)]

    async def delete(self, name: str) -> bool:
        check_blob_name(name)
        return self._blobs.pop(name, None) is not None

    async def aclose(self) -> None:
        """Nothing to release."""


def _copy_info(info: BlobInfo) -> BlobInfo:
    # BlobInfo is frozen but its metadata mapping is not: hand out a copy so callers cannot edit the store.
    return replace(info, metadata=dict(info.metadata))
