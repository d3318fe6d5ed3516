"""Azure SDK errors as orc's, for every Azure service orc keeps data in (Cosmos DB, Blob Storage, AI Search): the
status and the service's error code only, never chained (an SDK error's text may name the account or endpoint)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection

from azure.core.exceptions import AzureError, ClientAuthenticationError, HttpResponseError

from orc.errors import (
    ConfigurationError,
    ETagMismatch,
    ItemAlreadyExists,
    ItemNotFound,
    StorageError,
    StorageUnavailable,
)


def retry_after_seconds(error: HttpResponseError) -> float | None:
    """The wait the service asked for with ``error``, if it asked: Cosmos DB's ``x-ms-retry-after-ms``, or
    ``Retry-After`` (Blob Storage, AI Search)."""
    headers = getattr(error, "headers", None) or getattr(error.response, "headers", None) or {}
    try:
        if (milliseconds := headers.get("x-ms-retry-after-ms")) is not None:
            return float(milliseconds) / 1000.0
        seconds = headers.get("Retry-After")
        return float(seconds) if seconds is not None else None
    except ValueError:
        return None


@contextlib.asynccontextmanager
async def translated(
    service: str, what: str, *, credentials: str, missing: Collection[int] = (404,), missing_is_setup: bool = False
) -> AsyncIterator[None]:
    """SDK errors raised inside as orc's. ``service`` names the service in messages, ``what`` the resource a
    404 (or another ``missing`` status) says is absent: :class:`ItemNotFound`, or with ``missing_is_setup`` a
    :class:`ConfigurationError` (a resource orc does not create); ``credentials`` says what to check when the
    service refuses them."""
    try:
        yield
    except ClientAuthenticationError:
        raise ConfigurationError(f"{service} refused the credentials; {credentials}") from None
    except HttpResponseError as error:
        status = int(error.status_code or 0)
        error_code = getattr(error, "error_code", None)
        # The service's error code (e.g. "ServerBusy") names a condition and never holds a secret.
        code = f", {error_code}" if error_code and str(error_code).replace("_", "").isalnum() else ""
        if status in missing or status == 404:
            if missing_is_setup:
                raise ConfigurationError(f"{what} does not exist (status {status}); run orc doctor") from None
            raise ItemNotFound(f"{what} does not exist") from None
        if status == 409:
            raise ItemAlreadyExists(f"{what} already exists") from None
        if status == 412:
            raise ETagMismatch(f"{what} has changed") from None
        if status in (401, 403):
            refused = f"{service} refused the credentials (status {status}{code}); {credentials}"
            raise ConfigurationError(refused) from None
        if status == 429:
            raise StorageUnavailable(
                f"{service} is throttling requests beyond the client's retries (status 429{code}); retry later",
                retry_after=retry_after_seconds(error),
            ) from None
        if status == 408 or status >= 500:
            raise StorageUnavailable(
                f"{service} failed (status {status}{code}); retry later", retry_after=retry_after_seconds(error)
            ) from None
        raise StorageError(f"{service} refused the request (status {status}{code})") from None
    except AzureError as error:
        # Connection refused, DNS, TLS, timeouts: the SDK has already retried these within its budget.
        raise StorageUnavailable(f"{service} is unreachable ({type(error).__name__}); retry later") from None
