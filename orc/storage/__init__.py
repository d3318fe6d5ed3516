"""Storage ports and adapters.

The ports (:class:`DocumentCollection`, :class:`CollectionProvider`, :class:`BlobStore`) and the adapters that
need nothing beyond the standard library and aiosqlite are exported here. The Azure adapters import the Azure
SDKs, so they are imported from their modules only by deployments that use them::

    from orc.storage.cosmos import CosmosCollectionProvider
    from orc.storage.azure_blob import AzureBlobStore

The port errors (:class:`StorageError`, :class:`ItemNotFound`, :class:`ItemAlreadyExists`, :class:`ETagMismatch`,
:class:`StorageUnavailable`) are defined in :mod:`orc.errors` with every other error and re-exported here, so a
backend's author finds them beside the ports they implement.
"""

from __future__ import annotations

from orc.errors import ETagMismatch, ItemAlreadyExists, ItemNotFound, StorageError, StorageUnavailable
from orc.storage.localfs import LocalBlobStore
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.storage.ports import (
    BackendName,
    BlobInfo,
    BlobStore,
    CollectionProvider,
    DocumentCollection,
    JsonScalar,
    StoredItem,
)
from orc.storage.sqlite import SqliteCollectionProvider

__all__ = [
    "BackendName",
    "BlobInfo",
    "BlobStore",
    "CollectionProvider",
    "DocumentCollection",
    "ETagMismatch",
    "ItemAlreadyExists",
    "ItemNotFound",
    "JsonScalar",
    "LocalBlobStore",
    "MemoryBlobStore",
    "MemoryCollectionProvider",
    "SqliteCollectionProvider",
    "StorageError",
    "StorageUnavailable",
    "StoredItem",
]
