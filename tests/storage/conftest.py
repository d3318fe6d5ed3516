"""Backends for the storage conformance suites (:mod:`orc.testing.conformance`): every test runs once per
backend, on fresh storage.

Collections: memory, SQLite (a file in the test's tmp folder), Cosmos DB (cosmosdb-server emulator).
Blobs: memory, a local folder, Azure Blob Storage (Azurite). Emulator-backed params carry the ``emulator``
mark (``-m "not emulator"`` runs the embedded backends only).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from orc.storage.azure_blob import AzureBlobStore
from orc.storage.cosmos import CosmosCollectionProvider
from orc.storage.localfs import LocalBlobStore
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.storage.ports import BlobStore, CollectionProvider, DocumentCollection
from orc.storage.sqlite import SqliteCollectionProvider
from orc.testing.storage import unique_name
from tests.emulators import AzuriteBlob, CosmosEmulator

COLLECTION_BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("sqlite", id="sqlite"),
    pytest.param("cosmos", id="cosmos", marks=pytest.mark.emulator),
]
BLOB_BACKENDS = [
    pytest.param("memory", id="memory"),
    pytest.param("local", id="local"),
    pytest.param("azure-blob", id="azure-blob", marks=pytest.mark.emulator),
]


def emulator_cosmos_provider(emulator: CosmosEmulator, **options: Any) -> CosmosCollectionProvider:
    """A provider configured for cosmosdb-server's known differences from Cosmos DB.

    - A point read of a missing item answers 500 instead of 404: ``missing_read_status_codes=(404, 500)``
      (only ``get`` uses it; the adapter's default stays 404 for the real service).
    - It is a single region: endpoint discovery off, so the SDK does not retry the 500 above in "another
      region" after a 500 ms pause.
    """
    client_options = {"enable_endpoint_discovery": False, **options.pop("client_options", {})}
    return CosmosCollectionProvider(
        emulator.endpoint,
        key=emulator.key,
        database="orc-tests",
        missing_read_status_codes=(404, 500),
        client_options=client_options,
        **options,
    )


def azurite_blob_store(azurite: AzuriteBlob, container: str | None = None) -> AzureBlobStore:
    """A store on a fresh Azurite container."""
    return AzureBlobStore.from_connection_string(azurite.connection_string, container or unique_name())


@pytest.fixture(params=COLLECTION_BACKENDS)
async def provider(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CollectionProvider]:
    """A collection provider of each backend."""
    backend: str = request.param
    made: CollectionProvider
    if backend == "memory":
        made = MemoryCollectionProvider()
    elif backend == "sqlite":
        made = SqliteCollectionProvider(tmp_path / "orc.sqlite3")
    else:
        made = emulator_cosmos_provider(request.getfixturevalue("cosmos_emulator"))
    try:
        yield made
    finally:
        await made.aclose()


@pytest.fixture
async def collection(provider: CollectionProvider) -> DocumentCollection:
    """A fresh, empty collection of each backend."""
    return await provider.collection(unique_name())


@pytest.fixture(params=BLOB_BACKENDS)
async def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BlobStore]:
    """A fresh, empty blob store of each backend."""
    backend: str = request.param
    made: BlobStore
    if backend == "memory":
        made = MemoryBlobStore()
    elif backend == "local":
        made = LocalBlobStore(tmp_path / "blobs")
    else:
        made = azurite_blob_store(request.getfixturevalue("azurite"))
    try:
        yield made
    finally:
        await made.aclose()
