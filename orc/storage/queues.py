"""The job queue port: at-least-once delivery of small JSON jobs, and its in-process implementation.

Why a port: on one machine, document processing and digests run as asyncio tasks in the process that took the
upload; scaled out (Azure Functions, Container Apps) that work must outlive the instance and spread over many.
Both shapes consume the same :class:`JobQueue`; :mod:`orc.storage.azure_queue` is the Azure Storage Queue one.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from orc.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class ReceivedJob:
    """One delivery of a job: its body, how many times it has been delivered, and the handle to settle it."""

    body: dict[str, Any]
    dequeue_count: int
    message_id: str
    receipt: Any = field(repr=False, compare=False)
    """Backend handle (pop receipt, message object) that :meth:`JobQueue.complete` and ``abandon`` need."""


@runtime_checkable
class JobQueue(Protocol):
    """A queue of JSON jobs with at-least-once delivery.

    Contract:
    - :meth:`enqueue` stores the job durably (for the backend) before returning.
    - :meth:`receive` hides each returned job for ``visibility_seconds``; a job neither completed nor abandoned
      in that time is delivered again (to any consumer) with ``dequeue_count`` one higher. So a job can be
      handled more than once: handlers must be idempotent.
    - :meth:`complete` deletes the delivery; completing a delivery whose visibility lapsed and that was received
      again is a no-op (never an error), the newer delivery stays.
    - :meth:`abandon` makes the job visible again after ``delay_seconds``.
    """

    async def enqueue(self, body: Mapping[str, Any]) -> None: ...

    async def receive(self, max_jobs: int, visibility_seconds: float) -> list[ReceivedJob]: ...

    async def complete(self, job: ReceivedJob) -> None: ...

    async def abandon(self, job: ReceivedJob, delay_seconds: float = 0.0) -> None: ...

    async def aclose(self) -> None: ...


MAX_JOB_BYTES = 48 * 1024
"""Azure Storage Queue messages hold 64 KiB (48 KiB of JSON once base64-encoded); jobs are references, never data."""


def decode_job(content: bytes | str) -> dict[str, Any]:
    """A received message's job: ``{}`` when it is not a JSON object, which every handler refuses as malformed, so
    a stray message is dropped like any other bad job instead of failing the receive that brought it."""
    try:
        body = json.loads(content)
    except (ValueError, RecursionError):  # ValueError covers bytes that are not UTF-8; nesting can be 48 KiB deep
        return {}
    return body if isinstance(body, dict) else {}


def encode_job(body: Mapping[str, Any]) -> str:
    """The job as compact JSON, refusing one too large for a queue message."""
    text = json.dumps(dict(body), separators=(",", ":"), sort_keys=True)
    if len(text.encode()) > MAX_JOB_BYTES:
        raise InvalidInput(f"a job is limited to {MAX_JOB_BYTES} bytes of JSON")
    return text


class InProcessJobQueue:
    """The :class:`JobQueue` contract in memory, for one process (tests, and consumers sharing an event loop).

    Visibility timeouts use the event loop's clock; a delivery's ``receipt`` is a counter, so a stale one is
    recognised after the job was received again.
    """

    def __init__(self) -> None:
        self._jobs: dict[str, _Stored] = {}
        self._ids = itertools.count(1)
        self._receipts = itertools.count(1)
        self._arrived = asyncio.Event()

    def __len__(self) -> int:
        return len(self._jobs)

    async def enqueue(self, body: Mapping[str, Any]) -> None:
        """Store the job, visible at once."""
        job_id = str(next(self._ids))
        self._jobs[job_id] = _Stored(encode_job(body), visible_at=0.0)
        self._arrived.set()

    async def receive(self, max_jobs: int, visibility_seconds: float) -> list[ReceivedJob]:
        """Up to ``max_jobs`` visible jobs, oldest first, each hidden for ``visibility_seconds``."""
        now = asyncio.get_running_loop().time()
        taken: list[ReceivedJob] = []
        for job_id, stored in self._jobs.items():
            if len(taken) >= max_jobs:
                break
            if stored.visible_at > now:
                continue
            stored.visible_at = now + visibility_seconds
            stored.dequeue_count += 1
            stored.receipt = next(self._receipts)
            taken.append(ReceivedJob(decode_job(stored.text), stored.dequeue_count, job_id, stored.receipt))
        return taken

    async def complete(self, job: ReceivedJob) -> None:
        """Delete the job if this delivery is still the latest one."""
        stored = self._jobs.get(job.message_id)
        if stored is not None and stored.receipt == job.receipt:
            del self._jobs[job.message_id]

    async def abandon(self, job: ReceivedJob, delay_seconds: float = 0.0) -> None:
        """Make the job visible again after ``delay_seconds`` (only the latest delivery may)."""
        stored = self._jobs.get(job.message_id)
        if stored is not None and stored.receipt == job.receipt:
            stored.visible_at = asyncio.get_running_loop().time() + delay_seconds

    async def aclose(self) -> None:
        """Nothing to release."""


@dataclass(slots=True)
class _Stored:
    text: str
    visible_at: float
    dequeue_count: int = 0
    receipt: int = 0
