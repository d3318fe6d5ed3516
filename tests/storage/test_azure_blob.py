"""What the Azure Blob adapter promises beyond the port: its constructors, safe errors, consistent ETags."""

from __future__ import annotations

import pytest
from azure.storage.blob.aio import ContainerClient

from orc.errors import ConfigurationError, StorageUnavailable
from orc.storage.azure_blob import AzureBlobStore
from tests.emulators import AZURITE_KEY, AzuriteBlob, free_port
from tests.storage.conftest import azurite_blob_store, unique_name


async def test_an_unreachable_account_is_storage_unavailable_without_url_or_key() -> None:
    port = free_port()
    connection_string = (
        f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};"
        f"BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;"
    )
    store = AzureBlobStore.from_connection_string(connection_string, "orc", retry_total=0)
    try:
        with pytest.raises(StorageUnavailable) as caught:
            await store.put("a.txt", b"x")
    finally:
        await store.aclose()

    message = str(caught.value)
    assert str(port) not in message and "127.0.0.1" not in message and AZURITE_KEY not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_malformed_connection_string_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigurationError) as caught:
        AzureBlobStore.from_connection_string("AccountKey=c2VjcmV0LWtleQ==;no-endpoint", "orc")

    assert "c2VjcmV0LWtleQ" not in str(caught.value)


@pytest.mark.parametrize("container", ["ab", "Upper", "double--hyphen", "-leading", "x" * 64])
def test_invalid_container_names_are_a_configuration_error(container: str) -> None:
    with pytest.raises(ConfigurationError):
        AzureBlobStore.from_account_url("https://acct.blob.core.windows.net", container, "a2V5")


@pytest.mark.emulator
async def test_two_stores_share_an_existing_container(azurite: AzuriteBlob) -> None:
    container = unique_name()
    first, second = azurite_blob_store(azurite, container), azurite_blob_store(azurite, container)
    try:
        put = await first.put("a.txt", b"shared")

        data, info = await second.get("a.txt")
    finally:
        await first.aclose()
        await second.aclose()

    assert data == b"shared" and info.etag == put.etag


@pytest.mark.emulator
async def test_an_etag_from_a_listing_works_as_if_match(azurite: AzuriteBlob) -> None:
    store = azurite_blob_store(azurite)
    try:
        await store.put("a.txt", b"one")
        (listed,) = await store.list("")

        replaced = await store.put("a.txt", b"two", if_match=listed.etag)
    finally:
        await store.aclose()

    assert replaced.etag != listed.etag


@pytest.mark.emulator
async def test_a_container_deleted_behind_the_stores_back_is_created_again(azurite: AzuriteBlob) -> None:
    container = unique_name()
    store = azurite_blob_store(azurite, container)
    try:
        await store.put("a.txt", b"before")
        async with ContainerClient.from_connection_string(azurite.connection_string, container) as raw:
            await raw.delete_container()

        await store.put("b.txt", b"after")

        assert [info.name for info in await store.list("")] == ["b.txt"]
    finally:
        await store.aclose()
