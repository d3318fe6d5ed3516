"""Azure AI Search's errors as orc's: status and error code only, never chained (an SDK error's text may hold the
endpoint)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from azure.core.exceptions import AzureError, ClientAuthenticationError, HttpResponseError

from orc.errors import ConfigurationError, StorageError, StorageUnavailable
from orc.storage.azure_blob import retry_after_seconds


@contextlib.asynccontextmanager
async def translated(what: str) -> AsyncIterator[None]:
    """SDK errors raised inside as orc's; ``what`` names the resource a 404 says is missing."""
    try:
        yield
    except ClientAuthenticationError:
        raise ConfigurationError(
            "Azure AI Search refused the credentials; check ORC_SEARCH_KEY or the identity's Search Index Data "
            "Contributor role"
        ) from None
    except HttpResponseError as error:
        status = int(error.status_code or 0)
        error_code = getattr(error, "error_code", None)
        code = f", {error_code}" if error_code and str(error_code).replace("_", "").isalnum() else ""
        if status in (401, 403):
            raise ConfigurationError(f"Azure AI Search refused the credentials (status {status}{code})") from None
        if status == 404:
            raise ConfigurationError(f"{what} does not exist (status 404); run orc doctor") from None
        if status in (408, 429) or status >= 500:
            raise StorageUnavailable(
                f"Azure AI Search failed (status {status}{code}); retry later", retry_after=retry_after_seconds(error)
            ) from None
        raise StorageError(f"Azure AI Search refused the request (status {status}{code})") from None
    except AzureError as error:
        raise StorageUnavailable(f"Azure AI Search is unreachable ({type(error).__name__}); retry later") from None
