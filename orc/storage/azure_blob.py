"""The production blob backend: Azure Blob Storage through ``azure.storage.blob.aio``.

Why it looks like this:

- One :class:`~azure.storage.blob.aio.ContainerClient` per store (it owns the HTTP pipeline); blob clients
  are cheap views over it. The container is created on first use unless told otherwise.
- ETag conditions are the service's own: ``if_match`` is ``If-Match`` (``etag=`` + ``IfNotModified``),
  ``if_none_match`` is ``If-None-Match: *`` (``overwrite=False``), so they are atomic on the server.
  Azure answers 412 for ``If-Match`` on a missing blob; one ``HEAD`` then tells "missing" from "changed".
- The SDK retries 408/429/5xx and connection failures with a short exponential backoff (its default waits
  15 s before the first retry); past that budget the store raises :class:`StorageUnavailable`.
- Error messages carry status and error codes only, never the account URL, key or SAS, and SDK exceptions
  (whose text may hold the URL) are not chained.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from azure.core import MatchConditions
from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import BlobProperties, ContentSettings
from azure.storage.blob.aio import ContainerClient, ExponentialRetry

from orc.errors import (
    ConfigurationError,
    ETagMismatch,
    ItemNotFound,
    StorageUnavailable,
)
from orc.storage._common import check_blob_name, check_metadata, check_put_conditions
from orc.storage.azure_errors import translated
from orc.storage.ports import BlobInfo

__all__ = ["AzureBlobStore"]

_DEFAULT_CONTENT_TYPE = "application/octet-stream"
_CONTAINER_NAME = re.compile(r"^(?=.{3,63}$)[a-z0-9]+(-[a-z0-9]+)*$")


def _client_options(retry_total: int) -> dict[str, Any]:
    return {
        "retry_policy": ExponentialRetry(
            initial_backoff=1, increment_base=2, retry_total=retry_total, random_jitter_range=1
        ),
        "connection_timeout": 10.0,
        "read_timeout": 60.0,
    }


def _check_container_name(container: str) -> str:
    if not isinstance(container, str) or not _CONTAINER_NAME.fullmatch(container):
        raise ConfigurationError("blob container names are 3-63 lower-case letters, digits and single hyphens")
    return container


class AzureBlobStore:
    """A :class:`~orc.storage.ports.BlobStore` over one Azure Blob Storage container.

    Build it with :meth:`from_connection_string` or :meth:`from_account_url`; the constructor takes a
    ready :class:`~azure.storage.blob.aio.ContainerClient` (the store closes it in :meth:`aclose`).
    """

    def __init__(
        self,
        container: ContainerClient,
        *,
        create_container: bool = True,
        owned_credential: AsyncTokenCredential | None = None,
    ) -> None:
        self._container = container
        self._creates_container = create_container
        self._container_ready = not create_container
        self._owned_credential = owned_credential
        self._lock = asyncio.Lock()

    @property
    def container_name(self) -> str:
        """The blob container's name."""
        return str(self._container.container_name)

    @property
    def client(self) -> ContainerClient:
        """The one SDK client of this store, reused by every call."""
        return self._container

    @classmethod
    def from_connection_string(
        cls,
        connection_string: str,
        container: str,
        *,
        create_container: bool = True,
        retry_total: int = 3,
    ) -> AzureBlobStore:
        """Build from a storage connection string (account key or SAS)."""
        _check_container_name(container)
        options = _client_options(retry_total)
        try:
            client = ContainerClient.from_connection_string(connection_string, container, **options)
        except (ValueError, KeyError, TypeError):
            # The SDK's message may quote the string, which holds the key.
            raise ConfigurationError("the blob storage connection string is malformed") from None
        return cls(client, create_container=create_container)

    @classmethod
    def from_account_url(
        cls,
        url: str,
        container: str,
        credential: AsyncTokenCredential | str | None = None,
        *,
        create_container: bool = True,
        retry_total: int = 3,
    ) -> AzureBlobStore:
        """Build from ``https://<account>.blob.core.windows.net`` and a credential.

        ``credential`` is an async Entra ID token credential or a SAS token string. Without one, an
        :class:`azure.identity.aio.DefaultAzureCredential` is created (Entra ID) and closed by :meth:`aclose`.
        """
        _check_container_name(container)
        owned: AsyncTokenCredential | None = None
        if credential is None:
            from azure.identity.aio import DefaultAzureCredential  # heavy: only when really needed

            credential = owned = DefaultAzureCredential()
        options = _client_options(retry_total)
        try:
            client = ContainerClient(url, container, credential=credential, **options)
        except (ValueError, TypeError):
            raise ConfigurationError("the blob storage account URL is malformed") from None
        return cls(client, create_container=create_container, owned_credential=owned)

    # -- port --------------------------------------------------------------------------------------------------

    async def put(
        self,
        name: str,
        data: bytes,
        *,
        content_type: str = _DEFAULT_CONTENT_TYPE,
        metadata: Mapping[str, str] | None = None,
        if_match: str | None = None,
        if_none_match: bool = False,
    ) -> BlobInfo:
        check_blob_name(name)
        check_put_conditions(if_match, if_none_match)
        clean_metadata = check_metadata(metadata)
        payload = bytes(data)
        conditions: dict[str, Any] = {}
        if if_match is not None:
            conditions = {"etag": if_match, "match_condition": MatchConditions.IfNotModified}
        for attempt in range(2):
            container = await self._ready()
            try:
                async with _translated(f"blob {name!r}"):
                    result = await container.get_blob_client(name).upload_blob(
                        payload,
                        overwrite=not if_none_match,
                        content_settings=ContentSettings(content_type=content_type),
                        metadata=clean_metadata,
                        **conditions,
                    )
                break
            except ItemNotFound:
                # An upload never answers 404 for the blob itself: the container is gone (deleted behind our
                # back). Create it again once, if this store creates containers at all.
                if not self._creates_container:
                    raise ConfigurationError("the blob container does not exist") from None
                if attempt == 1:
                    raise StorageUnavailable("the blob container disappeared while writing; retry later") from None
                self._container_ready = False
            except ETagMismatch:
                # If-Match on a missing blob is also a 412: the port promises ItemNotFound for that case.
                if if_match is not None and await self.head(name) is None:
                    raise ItemNotFound(f"blob {name!r} does not exist") from None
                raise
        return BlobInfo(
            name=name,
            size=len(payload),
            etag=_quoted(str(result["etag"])),
            content_type=content_type,
            last_modified=result.get("last_modified"),
            metadata=clean_metadata,
        )

    async def get(self, name: str) -> tuple[bytes, BlobInfo]:
        check_blob_name(name)
        container = await self._ready()
        async with _translated(f"blob {name!r}"):
            downloader = await container.get_blob_client(name).download_blob()
            payload = await downloader.readall()
        return payload, _info(name, downloader.properties)

    async def head(self, name: str) -> BlobInfo | None:
        check_blob_name(name)
        container = await self._ready()
        try:
            async with _translated(f"blob {name!r}"):
                properties = await container.get_blob_client(name).get_blob_properties()
        except ItemNotFound:
            return None
        return _info(name, properties)

    async def list(self, prefix: str) -> Sequence[BlobInfo]:
        if not isinstance(prefix, str):
            raise TypeError("prefix is a string")
        container = await self._ready()
        async with _translated("blob listing"):
            found = [
                _info(properties.name, properties)
                async for properties in container.list_blobs(name_starts_with=prefix or None, include=["metadata"])
            ]
        # The service lists in name order already; sorting here keeps the contract independent of that.
        return sorted(found, key=lambda info: info.name)

    async def delete(self, name: str) -> bool:
        check_blob_name(name)
        container = await self._ready()
        try:
            async with _translated(f"blob {name!r}"):
                await container.get_blob_client(name).delete_blob(delete_snapshots="include")
        except ItemNotFound:
            return False
        return True

    async def container_exists(self) -> bool:
        """Whether the container exists (a start-up check on Azure, where the app does not create it)."""
        async with _translated("the blob container"):
            return bool(await self._container.exists())

    async def aclose(self) -> None:
        """Close the client (and the credential this store created)."""
        try:
            await self._container.close()
        finally:
            if self._owned_credential is not None:
                await self._owned_credential.close()

    async def _ready(self) -> ContainerClient:
        if not self._container_ready:
            async with self._lock:
                if not self._container_ready:
                    async with _translated("the blob container"):
                        with contextlib.suppress(ResourceExistsError):
                            await self._container.create_container()
                    self._container_ready = True
        return self._container


def _info(name: str, properties: BlobProperties) -> BlobInfo:
    settings = properties.content_settings
    return BlobInfo(
        name=name,
        size=int(properties.size or 0),
        etag=_quoted(str(properties.etag)),
        content_type=(settings.content_type if settings is not None else None) or _DEFAULT_CONTENT_TYPE,
        last_modified=properties.last_modified,
        # Listings report an empty value as a missing one; the port says values are strings.
        metadata={key: value or "" for key, value in (properties.metadata or {}).items()},
    )


def _quoted(etag: str) -> str:
    # Headers carry ETags quoted ("0x8D..."), listings unquoted (0x8D...): hand out one form only, so an
    # ETag from list() compares equal to, and works like, the one from put() or head().
    return etag if etag.startswith('"') else f'"{etag}"'


def _translated(what: str) -> AbstractAsyncContextManager[None]:
    return translated("blob storage", what, credentials="check the key, SAS or the identity's data-plane role")
