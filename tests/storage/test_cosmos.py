"""What the Cosmos DB adapter promises beyond the port: bounded throttling retries, safe errors, its settings.

Throttling is produced by a small local HTTP proxy in front of the emulator that answers 429 to item
creates, so the SDK's real retry policy runs; nothing inside the SDK is patched.
"""

from __future__ import annotations

import itertools
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web
from azure.core.credentials import AccessToken
from azure.cosmos import PartitionKey
from azure.cosmos.aio import CosmosClient

from orc.errors import ConfigurationError, StorageUnavailable
from orc.storage.cosmos import CosmosCollectionProvider, parse_cosmos_connection_string
from tests.emulators import COSMOS_EMULATOR_KEY, CosmosEmulator, free_port
from tests.storage.conftest import emulator_cosmos_provider, unique_name

PK = "org/user"
_HOP_BY_HOP = {"content-length", "transfer-encoding", "connection", "content-encoding", "host", "keep-alive"}


@dataclass
class ThrottlingProxy:
    """Forwards to the emulator, but answers 429 with ``x-ms-retry-after-ms`` to the next ``throttles`` creates."""

    upstream: str
    throttles: int = 0
    retry_after_ms: int = 50
    create_attempts: list[float] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        is_create = (
            request.method == "POST"
            and request.path.rstrip("/").endswith("/docs")
            and request.headers.get("x-ms-documentdb-isquery", "").lower() != "true"
        )
        if is_create:
            self.create_attempts.append(time.monotonic())
            if self.throttles > 0:
                self.throttles -= 1
                return web.json_response(
                    {"code": "TooManyRequests", "message": "Request rate is large"},
                    status=429,
                    headers={"x-ms-retry-after-ms": str(self.retry_after_ms), "x-ms-substatus": "3200"},
                )
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                request.method, self.upstream + request.path_qs, headers=headers, data=await request.read(), ssl=False
            ) as answer,
        ):
            body = await answer.read()
            return web.Response(
                status=answer.status,
                body=body,
                headers={k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP},
            )


@pytest.fixture
async def proxy(cosmos_emulator: CosmosEmulator) -> AsyncIterator[tuple[ThrottlingProxy, str]]:
    stub = ThrottlingProxy(upstream=cosmos_emulator.endpoint)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", stub.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))  # bound here, so no other process can take the port first
    await web.SockSite(runner, listener).start()
    try:
        yield stub, f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        await runner.cleanup()


def proxied_provider(endpoint: str, *, max_throttle_retries: int) -> CosmosCollectionProvider:
    # The proxy is one plain-HTTP endpoint: endpoint discovery would send the SDK to the emulator directly.
    return CosmosCollectionProvider(
        endpoint,
        key=COSMOS_EMULATOR_KEY,
        database="orc-tests",
        missing_read_status_codes=(404, 500),
        client_options={"enable_endpoint_discovery": False},
        max_throttle_retries=max_throttle_retries,
    )


@pytest.mark.emulator
async def test_throttled_writes_are_retried_after_the_delay_the_service_asks_for(
    proxy: tuple[ThrottlingProxy, str],
) -> None:
    stub, endpoint = proxy
    provider = proxied_provider(endpoint, max_throttle_retries=5)
    try:
        collection = await provider.collection(unique_name())
        stub.throttles, stub.retry_after_ms = 2, 80

        created = await collection.create(PK, "a", {"v": 1})

        assert created.body == {"v": 1}
        attempts = stub.create_attempts
        assert len(attempts) == 3
        assert all(later - earlier >= 0.07 for earlier, later in itertools.pairwise(attempts))
    finally:
        await provider.aclose()


@pytest.mark.emulator
async def test_throttling_beyond_the_retry_budget_is_storage_unavailable_with_retry_after(
    proxy: tuple[ThrottlingProxy, str],
) -> None:
    stub, endpoint = proxy
    provider = proxied_provider(endpoint, max_throttle_retries=2)
    try:
        collection = await provider.collection(unique_name())
        stub.throttles, stub.retry_after_ms = 1000, 20

        with pytest.raises(StorageUnavailable) as caught:
            await collection.create(PK, "a", {"v": 1})

        assert len(stub.create_attempts) == 3
        assert caught.value.retry_after == pytest.approx(0.02)
        assert await collection.get(PK, "a") is None
    finally:
        await provider.aclose()


async def test_an_unreachable_account_is_storage_unavailable_without_endpoint_or_key() -> None:
    port = free_port()
    provider = CosmosCollectionProvider(f"https://127.0.0.1:{port}", key=COSMOS_EMULATOR_KEY, database="orc")
    try:
        with pytest.raises(StorageUnavailable) as caught:
            await provider.collection("conversations")
    finally:
        await provider.aclose()

    message = str(caught.value)
    assert str(port) not in message and "127.0.0.1" not in message and COSMOS_EMULATOR_KEY not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


@pytest.mark.emulator
async def test_without_the_emulator_setting_a_missing_read_is_reported_as_a_failure(
    cosmos_emulator: CosmosEmulator,
) -> None:
    # Documents the emulator gap the fixtures work around: it answers 500, not 404, for a missing item.
    provider = CosmosCollectionProvider(
        cosmos_emulator.endpoint,
        key=cosmos_emulator.key,
        database="orc-tests",
        client_options={"enable_endpoint_discovery": False},
    )
    try:
        collection = await provider.collection(unique_name())
        with pytest.raises(StorageUnavailable):
            await collection.get(PK, "missing")
    finally:
        await provider.aclose()


@pytest.mark.emulator
async def test_items_are_stored_with_the_body_nested_under_its_own_field(cosmos_emulator: CosmosEmulator) -> None:
    name = unique_name()
    provider = emulator_cosmos_provider(cosmos_emulator)
    try:
        await (await provider.collection(name)).create(PK, "a", {"id": "not-the-id", "_etag": "not-the-etag"})
        collection = await provider.collection(name)
        stored = await collection.get(PK, "a")
    finally:
        await provider.aclose()

    assert stored is not None
    assert stored.id == "a" and stored.body == {"id": "not-the-id", "_etag": "not-the-etag"}
    assert stored.etag != "not-the-etag"
    async with CosmosClient(cosmos_emulator.endpoint, cosmos_emulator.key, enable_endpoint_discovery=False) as raw:
        container = raw.get_database_client("orc-tests").get_container_client(name)
        document = await container.read_item("a", partition_key=PK)
    assert {document["id"], document["pk"]} == {"a", PK}
    assert document["body"] == {"id": "not-the-id", "_etag": "not-the-etag"}


@pytest.mark.emulator
async def test_a_container_with_another_partition_key_is_a_configuration_error(
    cosmos_emulator: CosmosEmulator,
) -> None:
    name = unique_name()
    async with CosmosClient(cosmos_emulator.endpoint, cosmos_emulator.key, enable_endpoint_discovery=False) as raw:
        database = await raw.create_database_if_not_exists("orc-tests")
        await database.create_container_if_not_exists(id=name, partition_key=PartitionKey(path="/tenant"))

    provider = emulator_cosmos_provider(cosmos_emulator)
    try:
        with pytest.raises(ConfigurationError):
            await provider.collection(name)
    finally:
        await provider.aclose()


@pytest.mark.emulator
async def test_a_provider_can_be_built_from_a_connection_string(cosmos_emulator: CosmosEmulator) -> None:
    provider = CosmosCollectionProvider.from_connection_string(
        cosmos_emulator.connection_string,
        database="orc-tests",
        missing_read_status_codes=(404, 500),
        client_options={"enable_endpoint_discovery": False},
    )
    try:
        collection = await provider.collection(unique_name())
        assert (await collection.create(PK, "a", {})).id == "a"
    finally:
        await provider.aclose()


def test_a_connection_string_is_parsed_in_any_case_and_order() -> None:
    parsed = parse_cosmos_connection_string("accountkey=a2V5==;AccountEndpoint=https://acct.documents.azure.com:443/;")

    assert parsed == ("https://acct.documents.azure.com:443/", "a2V5==")


def test_a_malformed_connection_string_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_cosmos_connection_string("AccountKey=c2VjcmV0LWtleQ==;")

    assert "c2VjcmV0LWtleQ" not in str(caught.value)


class StaticToken:
    """An async token credential that hands out one fixed token."""

    async def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        return AccessToken("token", int(time.time()) + 3600)

    async def close(self) -> None:
        return None

    async def __aenter__(self) -> StaticToken:
        return self

    async def __aexit__(self, *args: object) -> None:
        return None


def test_a_key_and_a_credential_together_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        CosmosCollectionProvider("https://acct.documents.azure.com", key="a2V5", credential=StaticToken(), database="d")
