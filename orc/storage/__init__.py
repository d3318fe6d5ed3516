"""Storage ports and adapters.

The ports (:class:`DocumentCollection`, :class:`CollectionProvider`, :class:`BlobStore`) and the adapters that
need nothing beyond the standard library and aiosqlite are exported here. The Azure adapters import the Azure
SDKs, so they are imported from their modules only by deployments that use them::

    from orc.storage.cosmos import CosmosCollectionProvider
    from orc.storage.azure_blob import AzureBlobStore
"""

from __future__ import annotations

from orc.storage.localfs import LocalBlobStore
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.storage.ports import (
    BackendName,
    BlobInfo,
    BlobStore,
    CollectionProvider,
    DocumentCollection,
    ETagMismatch,
    ItemAlreadyExists,
    ItemNotFound,
    JsonScalar,
    StorageError,
    StorageUnavailable,
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
