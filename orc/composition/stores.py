"""The stores a process uses: the collections and blobs (embedded SQLite and a folder, or Cosmos DB and Blob
Storage), the search engine and the job queues, opened from settings and closed with the process."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from orc import resources as azure_resources
from orc.errors import ConfigurationError
from orc.search.port import SearchEngine
from orc.settings import Settings
from orc.storage.localfs import LocalBlobStore
from orc.storage.ports import BlobStore, CollectionProvider
from orc.storage.queues import JobQueue
from orc.storage.sqlite import SqliteCollectionProvider

if TYPE_CHECKING:  # the Azure SDKs load only where Azure is configured, numpy only where vectors are made
    from orc.search.azure import AzureSearchEngine
    from orc.search.vectors import SpanVectors
    from orc.storage.azure_blob import AzureBlobStore
    from orc.storage.azure_queue import AzureJobQueue
    from orc.storage.cosmos import CosmosCollectionProvider

_LOOPBACK = ("localhost", "127.0.0.1", "::1")
"""Hosts of a Cosmos DB emulator (a real account is never on loopback): single region, and a 500 for a missing
item on some reads."""


@dataclass(frozen=True, slots=True)
class Stores:
    """The storage a process uses: named collections, one blob store, and the search index (``None``: the engine
    ``ORC_SEARCH`` configures)."""

    collections: CollectionProvider
    blobs: BlobStore
    search: SearchEngine | None = None


@dataclass(frozen=True, slots=True)
class JobQueues:
    """The two job queues (names as in infra/main.bicep): document processing and session digests."""

    documents: JobQueue
    digests: JobQueue


async def open_job_queues(settings: Settings, stack: AsyncExitStack) -> JobQueues | None:
    """Azure Storage Queues when ``ORC_JOBS=queue``; None for in-process jobs (asyncio tasks, the default).

    Where resources are not created (``ORC_RESOURCES``), a missing queue stops start-up, named."""
    if settings.jobs != "queue":
        return None
    create = settings.creates_resources
    documents, digests = (job_queue(settings, name, create=create) for name in azure_resources.QUEUES)
    stack.push_async_callback(documents.aclose)
    stack.push_async_callback(digests.aclose)
    if not create:
        from orc.storage.azure_checks import missing_queues, refuse_to_start

        refuse_to_start(await missing_queues([documents, digests]))
    return JobQueues(documents=documents, digests=digests)


def job_queue(settings: Settings, name: str, *, create: bool) -> AzureJobQueue:
    """The Azure Storage Queue ``name`` in the account ``ORC_QUEUE_*`` names: a connection string, or an account URL
    reached with Entra ID."""
    from orc.storage.azure_queue import AzureJobQueue  # Azure SDK only when queues are used

    if settings.queue_connection_string is not None:
        secret = settings.queue_connection_string.get_secret_value()
        return AzureJobQueue.from_connection_string(secret, name, create_queue=create)
    assert settings.queue_account_url is not None  # settings.check() made sure
    return AzureJobQueue.from_account_url(settings.queue_account_url, name, create_queue=create)


async def open_stores(settings: Settings, stack: AsyncExitStack) -> Stores:
    """The embedded stores (SQLite file + local folder in ``ORC_HOME``) or the Azure ones."""
    settings.check()
    if settings.storage == "embedded":
        # Off the event loop: a file-system call there stalls every other request (and `langgraph dev` refuses it).
        await asyncio.to_thread(settings.home.mkdir, parents=True, exist_ok=True)
        collections: CollectionProvider = SqliteCollectionProvider(settings.home / "orc.sqlite3")
        blobs: BlobStore = LocalBlobStore(settings.home / "blobs")
    else:
        cosmos, azure_blobs = azure_stores(settings)
        stack.push_async_callback(cosmos.aclose)
        stack.push_async_callback(azure_blobs.aclose)
        if not settings.creates_resources:
            from orc.storage.azure_checks import missing_blob_container, missing_cosmos_containers, refuse_to_start

            refuse_to_start([*await missing_cosmos_containers(cosmos), *await missing_blob_container(azure_blobs)])
        return Stores(collections=cosmos, blobs=azure_blobs)
    stack.push_async_callback(collections.aclose)
    stack.push_async_callback(blobs.aclose)
    return Stores(collections=collections, blobs=blobs)


def azure_stores(settings: Settings) -> tuple[CosmosCollectionProvider, AzureBlobStore]:
    """Cosmos DB and Blob Storage clients (one each per process); keys when given, otherwise Entra ID.

    They create missing containers only where ``ORC_RESOURCES`` allows it (never on Azure)."""
    # Imported here so that embedded deployments never load the Azure SDKs.
    from orc.storage.azure_blob import AzureBlobStore
    from orc.storage.cosmos import CosmosCollectionProvider

    create = settings.creates_resources
    assert settings.cosmos_endpoint is not None  # settings.check() made sure
    emulator: dict[str, Any] = (
        {"missing_read_status_codes": (404, 500), "client_options": {"enable_endpoint_discovery": False}}
        if urlsplit(settings.cosmos_endpoint).hostname in _LOOPBACK
        else {}
    )
    collections = CosmosCollectionProvider(
        settings.cosmos_endpoint,
        database=settings.cosmos_database,
        key=settings.cosmos_key.get_secret_value() if settings.cosmos_key else None,
        create_containers=create,
        **emulator,
    )
    if settings.blob_connection_string is not None:
        blobs = AzureBlobStore.from_connection_string(
            settings.blob_connection_string.get_secret_value(), settings.blob_container, create_container=create
        )
    else:
        assert settings.blob_account_url is not None
        blobs = AzureBlobStore.from_account_url(
            settings.blob_account_url, settings.blob_container, create_container=create
        )
    return collections, blobs


async def open_search_engine(
    settings: Settings, stack: AsyncExitStack, vectors: SpanVectors | None = None
) -> SearchEngine:
    """The search engine (``ORC_SEARCH``), closed with ``stack``: the embedded one, its index in ``ORC_HOME/search``
    (shared by every process that uses that home), or Azure AI Search, whose index is created where
    ``ORC_RESOURCES`` allows and otherwise checked: a missing or unusable index stops start-up, named."""
    if settings.search == "azure":
        return await open_azure_search(settings, stack, vectors, create=settings.creates_resources)
    from orc.search.embedded import EmbeddedSearchEngine  # tantivy only where the embedded engine is used

    engine = EmbeddedSearchEngine(settings.home / "search")
    stack.push_async_callback(engine.aclose)
    return engine


def azure_search_engine(settings: Settings, **client_options: Any) -> AzureSearchEngine:
    """The Azure AI Search engine ``settings`` configure (its index not yet checked): an admin key when
    ``ORC_SEARCH_KEY`` is set, otherwise Entra ID."""
    from orc.search.azure import AzureSearchEngine  # the search SDK only where Azure AI Search is used

    if not settings.search_endpoint:
        raise ConfigurationError("missing required setting(s): ORC_SEARCH_ENDPOINT")
    return AzureSearchEngine.from_endpoint(
        settings.search_endpoint,
        azure_resources.SEARCH_INDEX,
        key=settings.search_key.get_secret_value() if settings.search_key else None,
        semantic=settings.search_semantic,
        **client_options,
    )


async def open_azure_search(
    settings: Settings,
    stack: AsyncExitStack,
    vectors: SpanVectors | None,
    *,
    create: bool,
    client_options: Mapping[str, Any] | None = None,
) -> AzureSearchEngine:
    """The Azure AI Search engine on ``ORC_SEARCH_ENDPOINT`` (a key, or Entra ID), its index prepared: created when
    ``create`` (its vector size measured on the embedding model), else checked. ``client_options`` go to the SDK's
    clients (a transport, in tests)."""
    from orc.storage.azure_checks import refuse_to_start

    engine = azure_search_engine(settings, **(client_options or {}))
    stack.push_async_callback(engine.aclose)

    async def measure() -> int:
        assert vectors is not None
        return len((await vectors.model.embed(["orc"], "query"))[0])

    refuse_to_start(await engine.prepare(create=create, measure=measure if vectors is not None else None))
    return engine
