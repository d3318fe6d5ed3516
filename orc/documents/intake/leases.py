"""Leases on documents being uploaded or processed, so that work a crashed process left behind is found and finished.

An upload takes a lease before it writes the document's record; the process working on the document renews it
while it works and drops it when the record is settled (``ready``/``failed``) or the job is safely in a queue. A
process killed mid-way (``kill -9``, an instance recycled) renews nothing: its lease lapses, and the next sweep
— in the restarted process or on any other instance sharing the store — takes it over and resumes the work
(:mod:`orc.documents.intake.recovery`). The leases live in one partition of their own collection, ordered by expiry,
so a sweep reads only the ones that lapsed.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orc.documents.intake.processing import DocumentLocation, ProcessingJob
from orc.errors import ETagMismatch, ItemNotFound
from orc.storage.ports import DocumentCollection

__all__ = ["Lease", "ProcessingLeases"]

PARTITION = "leases"


@dataclass(frozen=True, slots=True)
class Lease:
    """A document whose upload or processing some process holds, until ``until`` (epoch seconds)."""

    job: ProcessingJob
    until: float
    holder: str
    attempts: int
    """How many times the work was taken over after its holder stopped renewing (a document that kills every
    process that touches it must end ``failed``, not be retried forever)."""
    etag: str


def _lease_id(location: DocumentLocation) -> str:
    return hashlib.sha256(f"{location.partition_key}\n{location.item_id}".encode()).hexdigest()[:40]


class ProcessingLeases:
    """The leases of one store: hold, renew, release, and find and take over the lapsed ones. A lease holds
    ``lease_seconds`` unrenewed (30 s: ``orc.composition.tuning``) and is renewed every third of it while the work
    runs."""

    def __init__(
        self,
        collection: DocumentCollection,
        *,
        lease_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._collection = collection
        self.lease_seconds = lease_seconds
        self._clock = clock
        self.holder = f"proc-{uuid.uuid4().hex[:12]}"

    async def hold(self, job: ProcessingJob) -> None:
        """Take (or refresh) the lease on ``job``'s document, for a new upload of it."""
        await self._collection.upsert(PARTITION, _lease_id(job.location), self._body(job, attempts=0))

    async def renew(self, job: ProcessingJob) -> None:
        """Extend the lease while working on ``job``, keeping its count of take-overs."""
        lease_id = _lease_id(job.location)
        item = await self._collection.get(PARTITION, lease_id)
        if item is None:
            await self._collection.upsert(PARTITION, lease_id, self._body(job, attempts=0))
            return
        if item.body.get("content_hash") != job.content_hash:
            return  # a newer upload of the document holds the lease: this job's result will not count
        body = {**item.body, "lease_until": self._clock() + self.lease_seconds, "holder": self.holder}
        # Released or taken over meanwhile: the record decides whose result counts.
        with contextlib.suppress(ETagMismatch, ItemNotFound):
            await self._collection.replace(PARTITION, lease_id, body, if_match=item.etag)

    async def release(self, job: ProcessingJob) -> None:
        """Drop the lease on ``job``'s document (its record is settled, or its job is in a queue)."""
        lease_id = _lease_id(job.location)
        item = await self._collection.get(PARTITION, lease_id)
        if item is not None and item.body.get("content_hash") == job.content_hash:
            with contextlib.suppress(ETagMismatch, ItemNotFound):  # a newer upload of it holds the lease now
                await self._collection.delete(PARTITION, lease_id, if_match=item.etag)

    async def drop(self, lease: Lease) -> None:
        """Drop a lease found lapsed, unless someone took it since."""
        with contextlib.suppress(ETagMismatch, ItemNotFound):
            await self._collection.delete(PARTITION, _lease_id(lease.job.location), if_match=lease.etag)

    async def lapsed(self, limit: int = 50) -> list[Lease]:
        """Leases whose holder stopped renewing them, oldest first."""
        now = self._clock()
        items = await self._collection.query(PARTITION, order_by="lease_until", limit=limit)
        return [lease for lease in (self._lease(item.body, item.etag) for item in items) if lease.until < now]

    async def take_over(self, lease: Lease) -> Lease | None:
        """Hold a lapsed lease for this process (one process wins when several sweep at once); None if lost."""
        body = self._body(lease.job, attempts=lease.attempts + 1)
        try:
            item = await self._collection.replace(PARTITION, _lease_id(lease.job.location), body, if_match=lease.etag)
        except (ETagMismatch, ItemNotFound):
            return None
        return self._lease(item.body, item.etag)

    def _body(self, job: ProcessingJob, *, attempts: int) -> dict[str, Any]:
        return {
            **job.as_json(),
            "lease_until": self._clock() + self.lease_seconds,
            "holder": self.holder,
            "attempts": attempts,
        }

    @staticmethod
    def _lease(body: dict[str, Any], etag: str) -> Lease:
        return Lease(
            job=ProcessingJob.from_json(body),
            until=float(body["lease_until"]),
            holder=str(body.get("holder", "")),
            attempts=int(body.get("attempts", 0)),
            etag=etag,
        )
