"""The production :class:`~orc.storage.queues.JobQueue`: Azure Storage Queues through ``azure.storage.queue.aio``.

Why it looks like this:

- Messages are base64-encoded text: that is what a Functions queue trigger decodes by default
  (``host.json`` ``messageEncoding``), so the same queue feeds ``function_app.py`` and ``orc worker``. Received
  messages are decoded here, not by an SDK decode policy: a message that is not base64 fails the SDK's whole
  receive, which would hold every later job behind it; here it becomes a malformed job that the worker drops.
- The queue is created on first use (an ``azd`` deployment creates it too; creating twice is harmless), unless
  it is built with ``create_queue=False`` (on Azure: the template declares it and start-up checks it exists).
- A delivery's pop receipt settles it; when its visibility lapsed and the job was received again, the service
  answers 400 ``PopReceiptMismatch`` (404 once deleted) to the old receipt, which is the port's "no-op".
- Errors carry status codes only, never the account URL or key (SDK exception text may hold the URL).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from azure.core.credentials_async import AsyncTokenCredential
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
)
from azure.storage.queue import BinaryBase64EncodePolicy
from azure.storage.queue.aio import QueueClient

from orc.errors import ConfigurationError, StorageUnavailable
from orc.storage.queues import ReceivedJob, decode_job, encode_job

__all__ = ["AzureJobQueue"]

_MAX_BATCH = 32  # the service returns at most 32 messages per receive


def _codecs() -> dict[str, Any]:
    return {"message_encode_policy": BinaryBase64EncodePolicy()}


def _job_of(content: str | None) -> dict[str, Any]:
    try:
        return decode_job(base64.b64decode(content or "", validate=True))
    except (binascii.Error, ValueError):
        return {}


class AzureJobQueue:
    """One Azure Storage Queue of JSON jobs; build it with :meth:`from_connection_string` or :meth:`from_account_url`.

    The queue is closed by :meth:`aclose`.
    """

    def __init__(
        self,
        client: QueueClient,
        *,
        owned_credential: AsyncTokenCredential | None = None,
        create_queue: bool = True,
    ) -> None:
        self._client = client
        self._owned_credential = owned_credential
        self._ready = not create_queue

    @property
    def name(self) -> str:
        """The queue's name."""
        return str(self._client.queue_name)

    async def exists(self) -> bool:
        """Whether the queue exists (a start-up check on Azure, where the app does not create it)."""
        try:
            await self._client.get_queue_properties()
        except ResourceNotFoundError:
            return False
        except HttpResponseError as error:
            if isinstance(error, ClientAuthenticationError) or error.status_code in (401, 403):
                raise ConfigurationError(
                    f"the queue service refused the credentials (status {error.status_code}); check the key, SAS "
                    "or the identity's data-plane role"
                ) from None
            raise _unavailable(error) from None
        except AzureError as error:
            raise _unavailable(error) from None
        return True

    @classmethod
    def from_connection_string(cls, connection_string: str, queue: str, *, create_queue: bool = True) -> AzureJobQueue:
        """A queue in the account a connection string names (keys or SAS; Azurite's development account)."""
        try:
            client = QueueClient.from_connection_string(connection_string, queue, **_codecs())
        except (ValueError, KeyError, TypeError):
            raise ConfigurationError("the queue connection string is malformed") from None
        return cls(client, create_queue=create_queue)

    @classmethod
    def from_account_url(
        cls, url: str, queue: str, credential: AsyncTokenCredential | None = None, *, create_queue: bool = True
    ) -> AzureJobQueue:
        """A queue of the account at ``url``, with Entra ID (``DefaultAzureCredential`` unless one is given)."""
        owned: AsyncTokenCredential | None = None
        if credential is None:
            from azure.identity.aio import DefaultAzureCredential  # heavy: only when really needed

            credential = owned = DefaultAzureCredential()
        try:
            client = QueueClient(url, queue, credential=credential, **_codecs())
        except (ValueError, TypeError):
            raise ConfigurationError("the queue account URL is malformed") from None
        return cls(client, owned_credential=owned, create_queue=create_queue)

    async def _ensure(self) -> None:
        if self._ready:
            return
        try:
            await self._client.create_queue()
        except ResourceExistsError:
            pass
        except AzureError as error:
            raise _unavailable(error) from None
        self._ready = True

    async def enqueue(self, body: Mapping[str, Any]) -> None:
        """Send the job (visible at once)."""
        await self._ensure()
        try:
            await self._client.send_message(encode_job(body).encode())
        except AzureError as error:
            raise _unavailable(error) from None

    async def receive(self, max_jobs: int, visibility_seconds: float) -> list[ReceivedJob]:
        """Up to ``max_jobs`` jobs, each hidden for ``visibility_seconds`` (whole seconds, at least 1)."""
        await self._ensure()
        jobs: list[ReceivedJob] = []
        try:
            messages = self._client.receive_messages(
                messages_per_page=min(max_jobs, _MAX_BATCH),
                max_messages=max_jobs,
                visibility_timeout=max(1, round(visibility_seconds)),
            )
            async for message in messages:
                jobs.append(
                    ReceivedJob(
                        body=_job_of(message.content),
                        dequeue_count=int(message.dequeue_count or 1),
                        message_id=message.id,
                        receipt=message,
                    )
                )
        except AzureError as error:
            raise _unavailable(error) from None
        return jobs

    async def complete(self, job: ReceivedJob) -> None:
        """Delete this delivery; a stale receipt (the job was delivered again) is a no-op."""
        try:
            await self._client.delete_message(job.receipt)
        except AzureError as error:
            if not _stale(error):
                raise _unavailable(error) from None

    async def abandon(self, job: ReceivedJob, delay_seconds: float = 0.0) -> None:
        """Make the job visible again after ``delay_seconds``."""
        try:
            # By id and pop receipt, not the message: the content stays as stored, not re-sent.
            await self._client.update_message(
                job.receipt.id, pop_receipt=job.receipt.pop_receipt, visibility_timeout=max(0, round(delay_seconds))
            )
        except AzureError as error:
            if not _stale(error):
                raise _unavailable(error) from None

    async def aclose(self) -> None:
        """Close the HTTP pipeline (and the credential this queue created)."""
        await self._client.close()
        if self._owned_credential is not None:
            await self._owned_credential.close()


def _stale(error: AzureError) -> bool:
    """The delivery is gone (404) or was received again since (400 ``PopReceiptMismatch``)."""
    if isinstance(error, ResourceNotFoundError):
        return True
    return isinstance(error, HttpResponseError) and getattr(error, "error_code", None) == "PopReceiptMismatch"


def _unavailable(error: AzureError) -> StorageUnavailable:
    status = error.status_code if isinstance(error, HttpResponseError) else None
    return StorageUnavailable(f"the job queue failed (status {status or 'n/a'}); retry later")
