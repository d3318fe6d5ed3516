"""The production collection backend: Azure Cosmos DB (NoSQL API) through ``azure.cosmos.aio``.

Why it looks like this:

- One :class:`~azure.cosmos.aio.CosmosClient` per provider (it pools connections and caches routing); the
  database and each collection's container (partition key path ``/pk``) are created on first use, unless the
  provider is told not to (``create_containers=False``, on Azure): Entra ID data-plane roles cannot create them,
  so there they are declared in ``infra/main.bicep`` and checked once at start-up (:meth:`container_partition_keys`).
- An item is stored as ``{"id", "pk", "body": {...}}``: the caller's fields live under ``body`` so they can
  never clash with Cosmos system fields (``_etag``, ``_ts``, ``ttl``...).
- Every query is parameterized SQL and carries ``c.pk = @pk`` itself (some emulators ignore the
  ``partition_key=`` option), avoids OFFSET/LIMIT/DISTINCT/GROUP BY (not portable to emulators) and sorts
  on one field only, because multi-field ORDER BY needs a composite index per field. Ties on that field are
  broken by id on the client, with one extra query for the items tied at a ``limit`` boundary.
- Throttling (429) is retried by the SDK, which honours ``x-ms-retry-after-ms``, within a bounded budget
  (``max_throttle_retries``, :data:`THROTTLE_WAIT_SECONDS`); past it :class:`StorageUnavailable` carries
  the service's ``retry_after``. Connection failures, timeouts and 5xx answers become
  :class:`StorageUnavailable`; refused credentials become :class:`~orc.errors.ConfigurationError`.
- Error messages carry status codes and SDK error class names only, never the endpoint or the key, and
  the SDK exception (whose text may hold the endpoint) is not chained.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from azure.core import MatchConditions
from azure.core.credentials_async import AsyncTokenCredential
from azure.cosmos import PartitionKey
from azure.cosmos.aio import ContainerProxy, CosmosClient, DatabaseProxy

from orc.errors import ConfigurationError, ItemNotFound
from orc.storage._common import (
    break_ties_by_id,
    check_collection_name,
    check_item_id,
    check_partition_key,
    check_query,
    field_value,
    sort_key,
    to_json_object,
)
from orc.storage.azure_errors import translated
from orc.storage.ports import JsonScalar, StoredItem

__all__ = ["CosmosCollection", "CosmosCollectionProvider", "parse_cosmos_connection_string"]

_PARTITION_KEY_PATH = "/pk"
THROTTLE_WAIT_SECONDS = 30
"""The longest the SDK waits out throttling (429) for one request before it gives up."""
CONNECT_TIMEOUT = 10
TIMEOUT = 60
"""Seconds to connect, and for one request."""


def parse_cosmos_connection_string(connection_string: str) -> tuple[str, str]:
    """``(endpoint, key)`` from ``AccountEndpoint=...;AccountKey=...;``; never echoes the string on error."""
    parts: dict[str, str] = {}
    for part in connection_string.split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            parts[name.strip().lower()] = value.strip()
    endpoint, key = parts.get("accountendpoint"), parts.get("accountkey")
    if not endpoint or not key:
        raise ConfigurationError("the Cosmos DB connection string needs AccountEndpoint and AccountKey")
    return endpoint, key


class CosmosCollectionProvider:
    """A :class:`~orc.storage.ports.CollectionProvider` over one Cosmos DB database.

    Authentication: ``key`` (account key), or ``credential`` (any async Entra ID token credential), or
    neither, in which case an :class:`azure.identity.aio.DefaultAzureCredential` is created and closed by
    :meth:`aclose`. Entra ID data-plane roles cannot create databases or containers: with a token credential,
    provision them beforehand (partition key ``/pk``); existing ones are only read.

    ``missing_read_status_codes`` lists the statuses a point read of a missing item answers with. Cosmos DB
    answers 404, the default; the ``cosmosdb-server`` emulator answers 500, so its test fixture passes
    ``(404, 500)``. Only ``get`` uses it; every other operation maps statuses the standard way.

    ``client_options`` go to :class:`~azure.cosmos.aio.CosmosClient` unchanged (for example
    ``enable_endpoint_discovery=False`` for a single-region emulator).

    ``create_containers=False`` never creates the database or a container: :meth:`collection` only opens them
    (check they exist with :meth:`container_partition_keys` first).
    """

    def __init__(
        self,
        endpoint: str,
        *,
        key: str | None = None,
        credential: AsyncTokenCredential | None = None,
        database: str,
        missing_read_status_codes: Collection[int] = (404,),
        max_throttle_retries: int = 5,
        client_options: Mapping[str, Any] | None = None,
        create_containers: bool = True,
    ) -> None:
        if key is not None and credential is not None:
            raise ConfigurationError("give Cosmos DB either an account key or a token credential, not both")
        if not endpoint:
            raise ConfigurationError("the Cosmos DB endpoint is empty")
        if max_throttle_retries < 1:
            # The SDK reads 0 as "use the default of 9 retries", which would be a silent surprise.
            raise ValueError("max_throttle_retries must be at least 1")
        self.database_name = database
        self.creates_containers = create_containers
        self._endpoint = endpoint
        self._key = key
        self._credential = credential
        self._owned_credential: AsyncTokenCredential | None = None
        self._missing_read_status_codes = frozenset(missing_read_status_codes)
        self._client_options: dict[str, Any] = {
            "retry_throttle_total": max_throttle_retries,
            "retry_throttle_backoff_max": THROTTLE_WAIT_SECONDS,
            "connection_timeout": CONNECT_TIMEOUT,
            **(client_options or {}),
        }
        self._client: CosmosClient | None = None
        self._database: DatabaseProxy | None = None
        self._collections: dict[str, CosmosCollection] = {}
        self._lock = asyncio.Lock()

    @classmethod
    def from_connection_string(
        cls, connection_string: str, *, database: str, **options: Any
    ) -> CosmosCollectionProvider:
        """Build from an ``AccountEndpoint=...;AccountKey=...;`` connection string."""
        endpoint, key = parse_cosmos_connection_string(connection_string)
        return cls(endpoint, key=key, database=database, **options)

    @property
    def client(self) -> CosmosClient | None:
        """The one SDK client of this provider (created on first use), shared by all its collections."""
        return self._client

    async def collection(self, name: str) -> CosmosCollection:
        check_collection_name(name)
        found = self._collections.get(name)
        if found is not None:
            return found
        async with self._lock:
            found = self._collections.get(name)
            if found is None:
                database = await self._ensure_database()
                if not self.creates_containers:
                    found = self._collections[name] = CosmosCollection(
                        name, database.get_container_client(name), self._missing_read_status_codes
                    )
                    return found
                async with _translated():
                    container, properties = await database.create_container_if_not_exists(
                        id=name, partition_key=PartitionKey(path=_PARTITION_KEY_PATH), return_properties=True
                    )
                paths = (properties.get("partitionKey") or {}).get("paths")
                if paths is not None and list(paths) != [_PARTITION_KEY_PATH]:
                    raise ConfigurationError(
                        f"Cosmos DB container {name!r} exists with partition key {paths!r}, not ['/pk']"
                    )
                found = self._collections[name] = CosmosCollection(name, container, self._missing_read_status_codes)
            return found

    async def container_partition_keys(self) -> dict[str, list[str]] | None:
        """Each existing container of the database with its partition key paths; None when the database is missing.

        One read of the database's container feed: how start-up and ``orc doctor`` check the declared containers
        without creating anything.
        """
        async with self._lock:
            client = await self._ensure_client()
        database = client.get_database_client(self.database_name)
        found: dict[str, list[str]] = {}
        try:
            async with _translated(missing_statuses=frozenset({404})):
                async for properties in database.list_containers():
                    found[str(properties["id"])] = list((properties.get("partitionKey") or {}).get("paths") or [])
        except ItemNotFound:
            return None
        return found

    async def aclose(self) -> None:
        """Close the client (and the credential this provider created).

        A later :meth:`collection` call opens a new client; collections handed out before must be fetched again.
        """
        async with self._lock:
            client, self._client = self._client, None
            credential, self._owned_credential = self._owned_credential, None
            self._database = None
            self._collections.clear()
            try:
                if client is not None:
                    await client.close()
            finally:
                if credential is not None:
                    await credential.close()

    async def _ensure_database(self) -> DatabaseProxy:
        # Called with self._lock held.
        if self._database is None:
            client = await self._ensure_client()
            if not self.creates_containers:
                self._database = client.get_database_client(self.database_name)
                return self._database
            async with _translated():
                self._database = await client.create_database_if_not_exists(id=self.database_name)
        return self._database

    async def _ensure_client(self) -> CosmosClient:
        if self._client is None:
            credential: str | AsyncTokenCredential
            if self._key is not None:
                credential = self._key
            elif self._credential is not None:
                credential = self._credential
            else:
                from azure.identity.aio import DefaultAzureCredential  # heavy: only when really needed

                credential = self._owned_credential = DefaultAzureCredential()
            client = CosmosClient(self._endpoint, credential, **self._client_options)
            try:
                async with _translated():
                    await client.__aenter__()  # opens the HTTP pipeline and reads the account's regions
            except BaseException:
                await client.close()
                raise
            self._client = client
        return self._client


class CosmosCollection:
    """One Cosmos DB container; see :class:`~orc.storage.ports.DocumentCollection` for the contract."""

    def __init__(self, name: str, container: ContainerProxy, missing_read_status_codes: frozenset[int]) -> None:
        self.name = name
        self._container = container
        self._missing_read_status_codes = missing_read_status_codes

    async def get(self, partition_key: str, item_id: str) -> StoredItem | None:
        check_partition_key(partition_key)
        check_item_id(item_id)
        try:
            async with _translated(missing_statuses=self._missing_read_status_codes):
                document = await self._container.read_item(item_id, partition_key=partition_key, timeout=TIMEOUT)
        except ItemNotFound:
            return None
        return _to_item(document)

    async def create(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        document = _document(partition_key, item_id, body)
        async with _translated(what=f"item {item_id!r}"):
            created = await self._container.create_item(document, timeout=TIMEOUT)
        return _to_item(created)

    async def replace(
        self, partition_key: str, item_id: str, body: Mapping[str, Any], *, if_match: str | None = None
    ) -> StoredItem:
        document = _document(partition_key, item_id, body)
        async with _translated(what=f"item {item_id!r}"):
            replaced = await self._container.replace_item(
                item_id,
                document,
                etag=if_match,
                match_condition=MatchConditions.IfNotModified if if_match is not None else None,
                timeout=TIMEOUT,
            )
        return _to_item(replaced)

    async def upsert(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        document = _document(partition_key, item_id, body)
        async with _translated(what=f"item {item_id!r}"):
            stored = await self._container.upsert_item(document, timeout=TIMEOUT)
        return _to_item(stored)

    async def delete(self, partition_key: str, item_id: str, *, if_match: str | None = None) -> bool:
        check_partition_key(partition_key)
        check_item_id(item_id)
        try:
            async with _translated(what=f"item {item_id!r}"):
                await self._container.delete_item(
                    item_id,
                    partition_key=partition_key,
                    etag=if_match,
                    match_condition=MatchConditions.IfNotModified if if_match is not None else None,
                    timeout=TIMEOUT,
                )
        except ItemNotFound:
            return False
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
        """Items of one partition; same semantics as :meth:`orc.storage.memory.MemoryCollection.query`."""
        check_partition_key(partition_key)
        conditions = check_query(where, order_by, limit, id_prefix)
        if limit == 0:
            return []
        items = await self._select(partition_key, conditions, id_prefix, order_by, descending, limit)
        if order_by is None:
            return items
        if limit is not None and len(items) == limit:
            # Items tied with the last one may have been cut by TOP in any order: fetch all of them, so the
            # tie-break by id is exact at the boundary too.
            boundary = field_value(items[-1].body, order_by)
            tied_conditions: dict[str, object] = {**conditions, order_by: boundary}
            tied = await self._select(partition_key, tied_conditions, id_prefix, None, descending, None)
            head = [i for i in items if sort_key(field_value(i.body, order_by)) != sort_key(boundary)]
            items = head + tied
        return break_ties_by_id(items, order_by, descending=descending)[:limit]

    async def _select(
        self,
        partition_key: str,
        conditions: Mapping[str, object],
        id_prefix: str | None,
        order_by: str | None,
        descending: bool,
        limit: int | None,
    ) -> list[StoredItem]:
        clauses = ["c.pk = @pk"]
        parameters: list[dict[str, object]] = [{"name": "@pk", "value": partition_key}]
        for index, (field, value) in enumerate(conditions.items()):
            clauses.append(f"{_field(field)} = @w{index}")
            parameters.append({"name": f"@w{index}", "value": value})
        if id_prefix:
            clauses.append("STARTSWITH(c.id, @prefix)")
            parameters.append({"name": "@prefix", "value": id_prefix})
        direction = "DESC" if descending else "ASC"
        if order_by is None:
            order = f"c.id {direction}"
        else:
            # Cosmos DB leaves out items without the field anyway (depending on version); say so explicitly.
            clauses.append(f"IS_DEFINED({_field(order_by)})")
            order = f"{_field(order_by)} {direction}"
        top = ""
        if limit is not None:
            top = "TOP @limit "
            parameters.append({"name": "@limit", "value": limit})
        sql = f"SELECT {top}* FROM c WHERE {' AND '.join(clauses)} ORDER BY {order}"
        async with _translated():
            pages = self._container.query_items(
                query=sql, parameters=parameters, partition_key=partition_key, timeout=TIMEOUT
            )
            return [_to_item(document) async for document in pages]


def _field(name: str) -> str:
    # ``name`` is a validated identifier; a JSON string literal with bracket syntax also avoids reserved words.
    return f"c.body[{json.dumps(name)}]"


def _document(partition_key: str, item_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
    check_partition_key(partition_key)
    check_item_id(item_id)
    return {"id": item_id, "pk": partition_key, "body": to_json_object(body)}


def _to_item(document: Mapping[str, Any]) -> StoredItem:
    return StoredItem(
        id=str(document["id"]),
        partition_key=str(document["pk"]),
        body=dict(document.get("body") or {}),
        etag=str(document["_etag"]),
    )


def _translated(*, what: str = "item", missing_statuses: Collection[int] = (404,)) -> AbstractAsyncContextManager[None]:
    return translated("Cosmos DB", what, credentials="check the key or the identity's role", missing=missing_statuses)
