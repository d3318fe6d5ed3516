"""``Idempotency-Key`` for mutating requests, recorded through the document-collection port.

A key belongs to the principal that sent it (its records live in the principal's partition of the
``idempotency`` collection, so two users never share a key). The first request with a key *claims* it with a
conditional create — of concurrent requests with one key exactly one wins — runs, and stores its response. Later:

- the same key with the same request → the stored response (the caller adds ``Idempotent-Replayed: true``);
- the same key with a different request → :class:`IdempotencyKeyReused` (422);
- the same key while the first request still runs → :class:`IdempotencyKeyInFlight` (409).

Records expire after ``ttl`` (24 hours by default): an expired record counts as absent and is overwritten, and
each new claim deletes a few expired records of the principal, so the collection does not grow without bound on
backends that have no native TTL. A claim whose request died (its process crashed) is taken over once its
``lease`` has passed. The lease is short (30 s) and the process that holds a claim renews it while its request
runs (every third of the lease, for at most :data:`DEFAULT_MAX_HOLD`): a live request keeps its key, and a crashed
one blocks its retry for seconds, not the minutes a lease long enough for the slowest request would need. Responses
that a retry could change (5xx, failures) are not kept: the claim is released.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from orc.errors import (
    ETagMismatch,
    IdempotencyKeyInFlight,
    IdempotencyKeyReused,
    InvalidInput,
    ItemNotFound,
    StorageUnavailable,
)
from orc.principal import Principal
from orc.storage.ports import DocumentCollection, StoredItem
from orc.storage.updates import update_item

logger = logging.getLogger(__name__)

DEFAULT_TTL = timedelta(hours=24)
"""How long a key's response is kept: a day covers any client's retries of one request."""
DEFAULT_LEASE = timedelta(seconds=30)
DEFAULT_MAX_HOLD = timedelta(minutes=15)
"""Longest a claim is renewed: a request still running after this is treated as lost."""
SWEEP_LIMIT = 10
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
_PREFIX = "ik:"


@dataclass(frozen=True, slots=True)
class StoredResponse:
    """The response recorded for a key: what a replay answers."""

    status: int
    body: Any
    media_type: str


@dataclass(frozen=True, slots=True)
class Claim:
    """A key this request holds until it completes or abandons it."""

    partition_key: str
    item_id: str
    etag: str
    fingerprint: str


@dataclass(slots=True)
class _Holding:
    """A claim this process holds: the record's latest ETag (each renewal changes it) and its renewal."""

    etag: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


def fingerprint(parts: Any) -> str:
    """A stable hash of what makes two requests "the same request" (method, route, ids, headers, content)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


class IdempotencyKeys:
    """Claims, completes and replays idempotency keys."""

    def __init__(
        self,
        collection: DocumentCollection,
        *,
        ttl: timedelta = DEFAULT_TTL,
        lease: timedelta = DEFAULT_LEASE,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._items = collection
        self._ttl = ttl
        self._lease = lease
        self._clock = clock
        # The claims this process holds, by record: the latest ETag (renewals change it) and the renewing task.
        self._held: dict[tuple[str, str], _Holding] = {}

    async def begin(self, principal: Principal, key: str, request_fingerprint: str) -> Claim | StoredResponse:
        """Claim ``key`` for this request, or return the response recorded for it.

        Raises :class:`~orc.errors.InvalidInput` (``invalid_idempotency_key``) for a malformed key,
        :class:`IdempotencyKeyReused` and :class:`IdempotencyKeyInFlight`.
        """
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise InvalidInput("Idempotency-Key must be 1-255 visible ASCII characters", code="invalid_idempotency_key")
        pk = principal.partition_key
        item_id = _PREFIX + hashlib.sha256(key.encode()).hexdigest()
        now = self._clock()
        created = False
        replay: StoredResponse | None = None

        def claimed(item: StoredItem | None) -> dict[str, Any] | None:
            nonlocal now, created, replay
            now, created = self._clock(), item is None
            body = item.body if item is not None else {}
            taken_over = _expired(body.get("expires_at"), now) or (
                body.get("state") == "in_flight" and _expired(body.get("lease_until"), now)
            )
            if taken_over:
                return self._in_flight(request_fingerprint, now)
            if body.get("fingerprint") != request_fingerprint:
                raise IdempotencyKeyReused(
                    "this Idempotency-Key was used with a different request; use a new key for a new request"
                )
            if body.get("state") != "done":
                raise IdempotencyKeyInFlight("a request with this Idempotency-Key is still in progress; retry later")
            replay = StoredResponse(
                status=int(body["status"]), body=body.get("response"), media_type=str(body.get("media_type"))
            )
            return None

        # Created when there is none (the first read is skipped: most keys are new); of concurrent requests with
        # one key, exactly one creates or takes it over.
        stored = await update_item(
            self._items, pk, item_id, claimed, busy="the idempotency key is too busy; retry", current=None
        )
        if stored is None:
            assert replay is not None
            return replay
        if created:
            await self._sweep(pk, now)
        return self._hold(Claim(pk, item_id, stored.etag, request_fingerprint))

    async def complete(self, claim: Claim, status: int, body: Any, media_type: str = "application/json") -> None:
        """Record the response of the claimed request (what replays of the key answer)."""
        now = self._clock()
        record = {
            "kind": "idempotency_key",
            "state": "done",
            "fingerprint": claim.fingerprint,
            "status": status,
            "media_type": media_type,
            "response": body,
            "created_at": now.isoformat(),
            "expires_at": (now + self._ttl).isoformat(),
        }
        etag = await self._release(claim)
        try:
            await self._items.replace(claim.partition_key, claim.item_id, record, if_match=etag)
        except ETagMismatch:
            # The claim outlived its lease and another request took the key over; its answer is the one kept.
            logger.warning("an idempotency key was taken over before its request completed")

    async def abandon(self, claim: Claim) -> None:
        """Release the claim without a response (the request failed in a way a retry may fix)."""
        etag = await self._release(claim)
        with contextlib.suppress(ETagMismatch):
            await self._items.delete(claim.partition_key, claim.item_id, if_match=etag)

    def _hold(self, claim: Claim) -> Claim:
        holding = _Holding(claim.etag)
        holding.task = asyncio.create_task(self._renew(claim, holding))
        self._held[(claim.partition_key, claim.item_id)] = holding
        return claim

    async def _release(self, claim: Claim) -> str:
        """Stop renewing ``claim`` (a renewal under way finishes first); the record's current ETag."""
        holding = self._held.pop((claim.partition_key, claim.item_id), None)
        if holding is None:
            return claim.etag
        holding.stop.set()
        if holding.task is not None:
            await asyncio.gather(holding.task, return_exceptions=True)
        return holding.etag

    async def _renew(self, claim: Claim, holding: _Holding) -> None:
        """Move the claim's lease forward while its request runs (until released, or for :data:`DEFAULT_MAX_HOLD`)."""
        every = self._lease.total_seconds() / 3
        started = self._clock()
        with contextlib.suppress(ETagMismatch, ItemNotFound, StorageUnavailable):
            # Taken over, or storage is away: the lease runs out and another request may take the key.
            while self._clock() - started < DEFAULT_MAX_HOLD:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(holding.stop.wait(), every)
                if holding.stop.is_set():
                    return
                record = {**self._in_flight(claim.fingerprint, self._clock()), "created_at": started.isoformat()}
                renewed = await self._items.replace(claim.partition_key, claim.item_id, record, if_match=holding.etag)
                holding.etag = renewed.etag

    def _in_flight(self, request_fingerprint: str, now: datetime) -> dict[str, Any]:
        return {
            "kind": "idempotency_key",
            "state": "in_flight",
            "fingerprint": request_fingerprint,
            "created_at": now.isoformat(),
            "lease_until": (now + self._lease).isoformat(),
            "expires_at": (now + self._ttl).isoformat(),
        }

    async def _sweep(self, partition_key: str, now: datetime) -> None:
        """Delete a few of the principal's expired records (oldest expiry first)."""
        try:
            oldest = await self._items.query(partition_key, id_prefix=_PREFIX, order_by="expires_at", limit=SWEEP_LIMIT)
            for item in oldest:
                if _expired(item.body.get("expires_at"), now):
                    await self._items.delete(partition_key, item.id, if_match=item.etag)
        except (ETagMismatch, StorageUnavailable):
            pass  # best effort: the next claim sweeps again


def _expired(moment: Any, now: datetime) -> bool:
    if not isinstance(moment, str):
        return True
    try:
        parsed = datetime.fromisoformat(moment)
    except ValueError:
        return True
    return parsed <= now
