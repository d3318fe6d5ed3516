"""The two storage ports every backend implements.

Repositories (conversations, catalog, digests, idempotency records) are built once on these ports, so a new
backend is two small adapters, proven by the conformance suites shipped in :mod:`orc.testing.conformance`.
The errors the contracts name (:class:`~orc.errors.ItemNotFound`, :class:`~orc.errors.ItemAlreadyExists`,
:class:`~orc.errors.ETagMismatch`, :class:`~orc.errors.StorageUnavailable`) live in :mod:`orc.errors`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

JsonScalar = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class StoredItem:
    """One JSON document in a collection, with the ETag of the version read."""

    id: str
    partition_key: str
    body: dict[str, Any]
    etag: str


@runtime_checkable
class DocumentCollection(Protocol):
    """A Cosmos-shaped collection of JSON documents, partitioned by a string key.

    Contract (every backend, proven by the conformance suite):

    - ``id`` is unique within a partition; the same id in two partitions are two items.
    - ``get`` returns ``None`` for a missing item (never raises :class:`ItemNotFound`).
    - ``create`` raises :class:`ItemAlreadyExists` if the id exists; concurrent creates of one id: exactly one wins.
    - ``replace`` raises :class:`ItemNotFound` if missing and :class:`ETagMismatch` if ``if_match`` is given and
      stale; concurrent replaces with the same ``if_match``: exactly one wins.
    - ``upsert`` creates or overwrites unconditionally.
    - ``delete`` returns ``False`` for a missing item; with a stale ``if_match`` raises :class:`ETagMismatch`.
    - Every write returns a new ETag; ETags are opaque strings that change on every write.
    - ``query`` stays inside one partition; ``where`` is equality on top-level body fields; ``id_prefix`` filters
      ids by prefix; ``order_by`` sorts on a top-level body field (ties broken by id); ``limit`` caps the result.
    - Bodies are JSON objects; ``id`` and ``partition_key`` are not stored inside ``body`` by the caller.
    - Transient backend failures raise :class:`StorageUnavailable`, after bounded retries.
    """

    async def get(self, partition_key: str, item_id: str) -> StoredItem | None: ...

    async def create(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem: ...

    async def replace(
        self, partition_key: str, item_id: str, body: Mapping[str, Any], *, if_match: str | None = None
    ) -> StoredItem: ...

    async def upsert(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem: ...

    async def delete(self, partition_key: str, item_id: str, *, if_match: str | None = None) -> bool: ...

    async def query(
        self,
        partition_key: str,
        *,
        where: Mapping[str, JsonScalar] | None = None,
        id_prefix: str | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
    ) -> list[StoredItem]: ...


@runtime_checkable
class CollectionProvider(Protocol):
    """Hands out named collections of one backend (``conversations``, ``catalog``, ...)."""

    async def collection(self, name: str) -> DocumentCollection: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class BlobInfo:
    """What a blob store knows about a blob without reading it."""

    name: str
    size: int
    etag: str
    content_type: str = "application/octet-stream"
    last_modified: datetime | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class BlobStore(Protocol):
    """A flat namespace of byte blobs addressed by ``/``-separated names, with ETags.

    Contract (every backend, proven by the conformance suite):

    - Names come from :class:`orc.names.BlobPaths` only; adapters never interpret ``..`` or leading ``/``.
    - ``put`` overwrites unless ``if_none_match`` (then :class:`ItemAlreadyExists` when present) or ``if_match``
      (then :class:`ETagMismatch` when stale, :class:`ItemNotFound` when missing); returns the new info.
    - ``get`` raises :class:`ItemNotFound`; ``head`` returns ``None`` for a missing blob.
    - ``list`` returns the blobs whose names start with ``prefix``, sorted by name.
    - ``delete`` returns ``False`` for a missing blob.
    - Metadata keys are lower-case ASCII identifiers; values are ASCII strings.
    """

    async def put(
        self,
        name: str,
        data: bytes,
        *,
        content_type: str = "application/octet-stream",
        metadata: Mapping[str, str] | None = None,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> BlobInfo: ...

    async def get(self, name: str) -> tuple[bytes, BlobInfo]: ...

    async def head(self, name: str) -> BlobInfo | None: ...

    async def list(self, prefix: str) -> Sequence[BlobInfo]: ...

    async def delete(self, name: str) -> bool: ...

    async def aclose(self) -> None: ...


BackendName = Literal["memory", "sqlite", "local", "cosmos", "azure-blob"]
