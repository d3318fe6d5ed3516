"""Per-principal consumption limits: a request rate, a daily model-token quota and a cap on concurrent turns.

The rate and token counters live in the configured document store (collection ``quotas``, one item per principal
and counter, in the principal's partition), updated with ETag-conditional replaces, so every instance and worker
counts against the same numbers. A counter item holds only the current window: a new window overwrites it, so
the collection never grows beyond two items per principal.

Inside one process the updates of one principal are serialized by a lock, so a flood from one caller does not
turn into an ETag retry storm; once a window is full, the process remembers it until the window ends and answers
429 without touching the store. Concurrent turns are counted in process only (a turn holds its slot while it runs).

A caller this process refused in the last :data:`FLOODING_SECONDS` (a turn, or an upload: :class:`OperationQuotas`)
is *flooding*, and two things slow it down rather than everyone else:

- its turns give way at their yield points (:mod:`orc.turns.policy`): before each graph node, such a turn waits while
  another caller's turn runs, and for :data:`ANTICIPATION_SECONDS` after one ends (a caller asking one question
  after another is between two turns, not gone), at most :data:`MAX_YIELD_SECONDS` per node: slowed, never
  starved; and its steps run one at a time;
- a refusal answered before the route (:meth:`Quotas.hold_refusal`) is held up to :data:`REFUSAL_HOLD_SECONDS`
  before it is sent (at most :data:`MAX_HELD_REFUSALS` at once), so a client that retries as soon as it is
  refused sends one request a second per connection instead of thousands: a held refusal costs a timer, an
  answered one a request's parse, response and log line.

Measured with ``python -m bench.flood`` (``bench/README.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from orc.errors import (
    RateLimited,
    TokenQuotaExceeded,
    TooManyConcurrentTurns,
    TooManyRequests,
)
from orc.principal import Principal
from orc.storage.ports import DocumentCollection, StoredItem
from orc.storage.updates import update_item

_MAX_REMEMBERED = 4096
"""Refused principals remembered before the ones whose refusals no longer matter are forgotten."""
_MAX_ANTICIPATED = 256
"""Callers between two turns remembered before the ones whose anticipation ended are forgotten."""
_LIMIT_REFUSALS = (TooManyConcurrentTurns, RateLimited, TokenQuotaExceeded)

# The same form as orc.settings checks (settings are read at the edge only, so the pattern is repeated here).
_RATE_PATTERN = re.compile(r"([1-9][0-9]*)\s*/\s*(second|minute|hour|day)")
_WINDOWS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_DAY = 86400
_RATE_ID = "rate"
_TOKENS_ID = "tokens"

FLOODING_SECONDS = 5.0
"""How long after a refusal a caller's turns give way to other callers' turns."""
MAX_YIELD_SECONDS = 2.0
"""The longest a flooding caller's turn waits at one yield point."""
ANTICIPATION_SECONDS = 0.025
"""After another caller's last running turn ends, how long flooding turns still give way (its next turn comes)."""
REFUSAL_HOLD_SECONDS = 1.0
"""The longest an early refusal is held before it is sent (never longer than its ``Retry-After``)."""
MAX_HELD_REFUSALS = 1024
"""Refusals held at once per process; beyond them refusals are sent at once (each holds a connection)."""
MAX_CONCURRENT_UPLOADS = 4
"""Uploads one principal may have being stored and processed at once, per process (as ORC_MAX_CONCURRENT_TURNS
for turns): a flood of uploads then costs the others at most that many uploads' work at a time."""


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``count`` requests per fixed window of ``window_seconds``."""

    count: int
    window_seconds: int

    @classmethod
    def parse(cls, text: str) -> RateLimit | None:
        """``"20/hour"`` → 20 per 3600 s; ``""`` or ``"off"`` → no limit. :class:`ValueError` otherwise."""
        text = text.strip().lower()
        if text in ("", "off"):
            return None
        match = _RATE_PATTERN.fullmatch(text)
        if match is None:
            raise ValueError(f"not a rate limit: {text!r} (N/second|minute|hour|day)")
        return cls(int(match.group(1)), _WINDOWS[match.group(2)])


class TurnSlot:
    """One running turn of a principal; :meth:`release` frees it (once, however often it is called).

    It is also the turn's :class:`orc.graph.context.TurnGate`: while its principal is flooding and another principal's
    turn runs, the turn gives way at its yield points."""

    __slots__ = ("_held", "_key", "_quotas")

    def __init__(self, quotas: Quotas, key: str) -> None:
        self._quotas = quotas
        self._key = key
        self._held = True

    def release(self) -> None:
        """Free the slot (idempotent: a stream's end and its response's cleanup may both call it)."""
        if not self._held:
            return
        self._held = False
        self._quotas._released(self._key)

    def yielding(self) -> bool:
        """Whether the turn must give way before its next step (never once the slot is released)."""
        return self._held and self._quotas._flooding(self._key)

    @contextlib.asynccontextmanager
    async def step(self) -> AsyncIterator[None]:
        """Wait while other principals' turns run (bounded), then hold the principal's one step lane."""
        async with self._quotas._lane(self._key):
            await self._quotas._give_way(self._key)
            yield

    def __enter__(self) -> TurnSlot:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


class Quotas:
    """Admits or refuses a principal's turns; ``None`` limits are off (``ORC_AUTH=none`` turns all of them off).

    The flooding bounds default to this module's constants (tests shorten them)."""

    def __init__(
        self,
        collection: DocumentCollection | None,
        *,
        rate: RateLimit | None,
        daily_tokens: int | None,
        max_concurrent: int | None,
        clock: Callable[[], float] = time.time,
        flooding_seconds: float = FLOODING_SECONDS,
        max_yield_seconds: float = MAX_YIELD_SECONDS,
        refusal_hold_seconds: float = REFUSAL_HOLD_SECONDS,
        max_held_refusals: int = MAX_HELD_REFUSALS,
        anticipation_seconds: float = ANTICIPATION_SECONDS,
    ) -> None:
        self._collection = collection
        self._rate = rate
        self._daily_tokens = daily_tokens
        self._max_concurrent = max_concurrent
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        # principal -> end of a window known to be full (or of a day whose tokens are spent): answer from memory.
        self._full_until: dict[tuple[str, str], float] = {}
        self._running: dict[str, int] = {}
        self._flooding_seconds = flooding_seconds
        self._max_yield = max_yield_seconds
        self._refusal_hold = refusal_hold_seconds
        self._max_held_refusals = max_held_refusals
        self._anticipation = anticipation_seconds
        self._anticipated: dict[str, float] = {}
        self._refused_at: dict[str, float] = {}
        self._forget_beyond = _MAX_REMEMBERED
        self._lanes: dict[str, asyncio.Lock] = {}
        self._turn_ended = asyncio.Event()
        self._held_refusals = 0

    @property
    def enabled(self) -> bool:
        """Whether any limit applies."""
        return bool(self._rate or self._daily_tokens or self._max_concurrent)

    def refuse_early(self, principal: Principal) -> None:
        """Raise the refusal this process already knows the principal will get (a full concurrency cap, a window
        known to be full), from memory only: a flood is turned away before its requests are parsed further."""
        key = principal.partition_key
        self._refuse_at_cap(key)
        self._refuse_known_full(key, self._clock())

    def _refuse_at_cap(self, key: str) -> None:
        if self._max_concurrent is not None and self._running.get(key, 0) >= self._max_concurrent:
            self._refused(key, self._clock())
            raise TooManyConcurrentTurns(
                f"at most {self._max_concurrent} turns may run at once; wait for one to finish", retry_after=1
            )

    def _refuse_known_full(self, key: str, now: float) -> None:
        """Refuse from memory when a window (or the day's tokens) is known to be used up."""
        for counter in (_TOKENS_ID, _RATE_ID):
            until = self._full_until.get((key, counter), 0.0)
            if until > now:
                self._refused(key, now)
                raise self._refusal(counter, until - now)

    async def hold_refusal(self, refusal: BaseException) -> None:
        """Hold an early 429 for up to :data:`REFUSAL_HOLD_SECONDS` (its ``Retry-After`` at most) before it is
        sent, unless :data:`MAX_HELD_REFUSALS` are held already; other refusals are not held."""
        retry_after = getattr(refusal, "retry_after", None)
        if not isinstance(refusal, _LIMIT_REFUSALS) or retry_after is None:
            return
        if self._held_refusals >= self._max_held_refusals:
            return
        self._held_refusals += 1
        try:
            await asyncio.sleep(min(self._refusal_hold, retry_after))
        finally:
            self._held_refusals -= 1

    async def admit(self, principal: Principal) -> None:
        """Count one request; :class:`RateLimited` or :class:`TokenQuotaExceeded` (with ``retry_after``) when over."""
        if self._collection is None or (self._rate is None and self._daily_tokens is None):
            return
        now = self._clock()
        key = principal.partition_key
        self._refuse_known_full(key, now)
        async with self._lock(key):
            if self._daily_tokens is not None:
                day_start = now - now % _DAY
                used = await self._read(key, _TOKENS_ID, day_start)
                if used >= self._daily_tokens:
                    self._full_until[(key, _TOKENS_ID)] = day_start + _DAY
                    self._refused(key, now)
                    raise self._refusal(_TOKENS_ID, day_start + _DAY - now)
            if self._rate is not None:
                window_start = now - now % self._rate.window_seconds
                window_end = window_start + self._rate.window_seconds
                limit = self._rate.count
                counted = await self._add(key, _RATE_ID, window_start, 1, cap=limit)
                if counted is None:
                    self._full_until[(key, _RATE_ID)] = window_end
                    self._refused(key, now)
                    raise self._refusal(_RATE_ID, window_end - now)

    async def may_digest(self, principal: Principal) -> bool:
        """Whether digests of the principal's uploads may call the model now: not while its turns are refused
        (its turn window full, or the day's tokens spent)."""
        key, now = principal.partition_key, self._clock()
        if any(self._full_until.get((key, counter), 0.0) > now for counter in (_TOKENS_ID, _RATE_ID)):
            return False
        if self._collection is None:
            return True
        # Read from the store: the process that refused the principal's turns may be another one.
        if self._daily_tokens is not None and await self._read(key, _TOKENS_ID, now - now % _DAY) >= self._daily_tokens:
            return False
        if self._rate is not None:
            window = self._rate.window_seconds
            return await self._read(key, _RATE_ID, now - now % window) < self._rate.count
        return True

    async def charge(self, principal: Principal, tokens: int) -> None:
        """Add the tokens a finished turn used to the principal's day (known only after the turn)."""
        if self._collection is None or self._daily_tokens is None or tokens <= 0:
            return
        now = self._clock()
        async with self._lock(principal.partition_key):
            await self._add(principal.partition_key, _TOKENS_ID, now - now % _DAY, tokens, cap=None)

    def note_refusal(self, principal: Principal) -> None:
        """Note that another of the principal's costly operations (an upload) was refused: it is flooding for a
        while, as if a turn had been refused."""
        self._refused(principal.partition_key, self._clock())

    async def give_way(self, principal: Principal) -> None:
        """While the principal is flooding, wait as its turns do at a yield point: while another principal's turn
        runs, or has just ended, at most :data:`MAX_YIELD_SECONDS`. Nothing otherwise."""
        key = principal.partition_key
        if self._flooding(key):
            await self._give_way(key)

    def turn_slot(self, principal: Principal) -> TurnSlot:
        """Take one of the principal's concurrent-turn slots; :class:`TooManyConcurrentTurns` when none is free.

        Refused at once rather than queued: a queue would let one caller's backlog hold the process's memory.
        The slot is freed by :meth:`TurnSlot.release` (or by leaving it as a context manager).
        """
        key = principal.partition_key
        self._refuse_at_cap(key)
        self._running[key] = self._running.get(key, 0) + 1
        return TurnSlot(self, key)

    # -- fair turns (the gate) -----------------------------------------------------------------------------

    def _released(self, key: str) -> None:
        left = self._running[key] - 1
        if left:
            self._running[key] = left
        else:
            del self._running[key]
            self._lanes.pop(key, None)  # nobody holds it: the principal has no turn running
            if self._refused_at and not self._flooding(key):
                # A caller whose turns come one after the other is between two of them: anticipate the next
                # (only worth noting while someone is flooding: nobody else asks).
                now = time.monotonic()
                if len(self._anticipated) > _MAX_ANTICIPATED:
                    self._anticipated = {other: until for other, until in self._anticipated.items() if until > now}
                self._anticipated[key] = now + self._anticipation
        # Wake the turns giving way, so they look again (a new event for the next wait).
        self._turn_ended.set()
        self._turn_ended = asyncio.Event()

    def _refused(self, key: str, now: float) -> None:
        """Note a refusal (the principal is flooding for a while); forget old ones once there are many."""
        self._refused_at[key] = now
        if len(self._refused_at) > self._forget_beyond:
            horizon = now - self._flooding_seconds
            self._refused_at = {other: at for other, at in self._refused_at.items() if at >= horizon}
            self._full_until = {entry: until for entry, until in self._full_until.items() if until > now}
            # Amortized: when most refusals are recent, the next clean-up waits for twice as many.
            self._forget_beyond = max(_MAX_REMEMBERED, 2 * len(self._refused_at))

    def _flooding(self, key: str) -> bool:
        refused = self._refused_at.get(key)
        if refused is None:
            return False
        if self._clock() - refused < self._flooding_seconds:
            return True
        del self._refused_at[key]
        return False

    def _others_active(self, key: str) -> float | None:
        """``0`` when another (not flooding) principal's turn runs; the seconds until the latest one's anticipation
        ends when one just finished; ``None`` when nobody else is active."""
        if any(other != key and not self._flooding(other) for other in self._running):
            return 0.0
        now = time.monotonic()
        latest = max((until for other, until in self._anticipated.items() if other != key), default=now)
        if latest <= now:
            for ended in [other for other, until in self._anticipated.items() if until <= now]:
                del self._anticipated[ended]
            return None
        return latest - now

    def _lane(self, key: str) -> asyncio.Lock:
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = asyncio.Lock()
        return lane

    async def _give_way(self, key: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._max_yield
        while (active := self._others_active(key)) is not None:
            left = deadline - loop.time()
            if left <= 0:
                return
            try:
                # Wake when a turn ends, or when a caller who just finished one has not sent the next in time.
                async with asyncio.timeout(min(left, active) if active else left):
                    await self._turn_ended.wait()
            except TimeoutError:
                if not active:
                    return

    # -- counters -----------------------------------------------------------------------------------------

    def _lock(self, key: str) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def _refusal(self, counter: str, wait: float) -> RateLimited | TokenQuotaExceeded:
        seconds = max(1, math.ceil(wait))
        if counter == _TOKENS_ID:
            return TokenQuotaExceeded(
                f"the daily model-token quota ({self._daily_tokens}) is used up", retry_after=seconds
            )
        assert self._rate is not None
        return RateLimited(
            f"at most {self._rate.count} requests per {self._rate.window_seconds} s", retry_after=seconds
        )

    async def _read(self, key: str, item_id: str, window_start: float) -> int:
        assert self._collection is not None
        item = await self._collection.get(key, item_id)
        if item is None or item.body.get("window") != window_start:
            return 0
        return int(item.body.get("count", 0))

    async def _add(self, key: str, item_id: str, window_start: float, amount: int, *, cap: int | None) -> int | None:
        assert self._collection is not None
        return await add_to_window(self._collection, key, item_id, window_start, amount, cap=cap)


async def add_to_window(
    collection: DocumentCollection, key: str, item_id: str, window_start: float, amount: int, *, cap: int | None
) -> int | None:
    """Add ``amount`` to the counter ``item_id`` of the window starting at ``window_start``; ``None`` (nothing
    added) when that would pass ``cap``. Conditional writes make concurrent instances count each request once."""

    def added(item: StoredItem | None) -> dict[str, Any] | None:
        current = 0 if item is None or item.body.get("window") != window_start else int(item.body["count"])
        if cap is not None and current + amount > cap:
            return None
        return {"window": window_start, "count": current + amount}

    stored = await update_item(collection, key, item_id, added, busy="the quota counter is contended; retry")
    return int(stored.body["count"]) if stored is not None else None


# -- uploads and exports ---------------------------------------------------------------------------------------------


class OperationQuotas:
    """The costly operations besides turns, per principal per window, counted in the ``quotas`` collection like
    turns: files and bytes uploaded (``ORC_UPLOAD_RATE``, ``ORC_UPLOAD_MB_PER_WINDOW``), refused with 429
    ``upload_limit`` before anything is stored, processed or digested; exports (``ORC_EXPORT_RATE``), refused with
    429 ``export_limit`` before anything is rendered. ``None`` limits are off.

    A refusal is held up to :data:`REFUSAL_HOLD_SECONDS` before it is raised (at most :data:`MAX_HELD_REFUSALS`
    at once), as turns' early refusals are: a client that uploads again as soon as it is refused then sends one
    request a second per connection, instead of keeping the server busy reading bodies it will refuse.

    With ``fairness`` (the turn :class:`Quotas`), a refused upload makes its principal *flooding* there, and a
    flooding principal's admitted uploads wait before they are stored while other principals' turns run (bounded,
    as its turns wait at their nodes): storing, indexing and digesting a flood's admitted share of uploads then
    happens between the other callers' turns rather than inside them.

    Implements :class:`orc.documents.intake.uploads.UploadAdmission` and
    :class:`orc.conversations.exporting.ExportAdmission`: the services call it, not the adapters.
    """

    def __init__(
        self,
        collection: DocumentCollection | None,
        *,
        files: RateLimit | None,
        max_bytes: int | None,
        exports: RateLimit | None = None,
        max_concurrent_uploads: int | None = None,
        fairness: Quotas | None = None,
        clock: Callable[[], float] = time.time,
        refusal_hold_seconds: float = REFUSAL_HOLD_SECONDS,
    ) -> None:
        self._collection = collection
        self._fairness = fairness
        self._files = files
        self._max_bytes = max_bytes
        self._exports = exports
        self._max_concurrent = max_concurrent_uploads
        self._in_flight: dict[str, int] = {}  # uploads (and "<key>#exports") running now, per principal
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        self._full_until: dict[str, float] = {}
        self._refusal_hold = refusal_hold_seconds
        self._held = 0

    @contextlib.asynccontextmanager
    async def uploading(self, principal: Principal, files: int, size: int) -> AsyncIterator[None]:
        """Hold one of the principal's concurrent-upload slots while the block stores and processes ``files``
        files of ``size`` bytes, counted in its window. Refused (held, then raised) with 429
        ``too_many_concurrent_uploads`` when its slots are taken, ``upload_limit`` when the window cannot take
        the files (nothing is counted then)."""
        key = principal.partition_key
        if self._max_concurrent is not None and self._in_flight.get(key, 0) >= self._max_concurrent:
            refusal = TooManyRequests(
                f"at most {self._max_concurrent} uploads may run at once; wait for one to finish",
                code="too_many_concurrent_uploads",
                retry_after=1,
            )
            self._note_refusal(principal)
            await self._hold(refusal)
            raise refusal
        # Taken before the window's store round trip, so that concurrent uploads see it.
        self._in_flight[key] = self._in_flight.get(key, 0) + 1
        try:
            try:
                await self._admit(principal, files, size)
            except TooManyRequests as refusal:
                self._note_refusal(principal)
                await self._hold(refusal)
                raise
            if self._fairness is not None:
                await self._fairness.give_way(principal)
            yield
        finally:
            left = self._in_flight[key] - 1
            if left:
                self._in_flight[key] = left
            else:
                del self._in_flight[key]

    @contextlib.asynccontextmanager
    async def exporting(self, principal: Principal) -> AsyncIterator[None]:
        """Hold the principal's one export slot while the block renders, counted in its window. Refused (held,
        then raised) with 429 ``too_many_concurrent_exports`` while another of its exports renders in this
        process, ``export_limit`` when its window is full."""
        key = f"{principal.partition_key}#exports"
        if self._collection is not None and key in self._in_flight:
            refusal = TooManyRequests(
                "one export at a time; wait for the other to finish", code="too_many_concurrent_exports", retry_after=1
            )
            await self._hold(refusal)
            raise refusal
        self._in_flight[key] = 1  # taken before the window's store round trip: a concurrent export sees it
        try:
            await self._admit_export(principal)
            yield
        finally:
            del self._in_flight[key]

    async def _admit_export(self, principal: Principal) -> None:
        if self._collection is None or self._exports is None:
            return
        now = self._clock()
        window = self._exports.window_seconds
        start = now - now % window
        key = principal.partition_key
        known_full = self._full_until.get(f"{key}#exports", 0.0) > now
        if (
            known_full
            or (await add_to_window(self._collection, key, "exports", start, 1, cap=self._exports.count)) is None
        ):
            self._full_until[f"{key}#exports"] = start + window
            refusal = RateLimited(
                f"at most {self._exports.count} exports per {window} s",
                code="export_limit",
                retry_after=max(1, math.ceil(start + window - now)),
            )
            await self._hold(refusal)
            raise refusal

    def _note_refusal(self, principal: Principal) -> None:
        if self._fairness is not None:
            self._fairness.note_refusal(principal)

    async def _hold(self, refusal: TooManyRequests) -> None:
        if self._held >= MAX_HELD_REFUSALS:
            return
        self._held += 1
        try:
            await asyncio.sleep(min(self._refusal_hold, refusal.retry_after))
        finally:
            self._held -= 1

    async def _admit(self, principal: Principal, files: int, size: int) -> None:
        if self._collection is None or self._files is None or files <= 0:
            return
        now = self._clock()
        window = self._files.window_seconds
        start = now - now % window
        key = principal.partition_key
        if self._full_until.get(key, 0.0) > now:
            raise self._refusal(start + window - now)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if self._max_bytes is not None:
                counted = await add_to_window(self._collection, key, "upload_bytes", start, size, cap=self._max_bytes)
                if counted is None:
                    raise self._refusal(start + window - now)  # a smaller file may still fit: not remembered
            counted = await add_to_window(self._collection, key, "upload_files", start, files, cap=self._files.count)
            if counted is None:
                if self._max_bytes is not None:  # the bytes were counted for files that are refused: give them back
                    await add_to_window(self._collection, key, "upload_bytes", start, -size, cap=None)
                if files == 1:  # not even one more file: the window is full, refused from memory until it ends
                    self._full_until[key] = start + window
                raise self._refusal(start + window - now)
        if len(self._full_until) > _MAX_REMEMBERED:
            self._full_until = {other: until for other, until in self._full_until.items() if until > now}

    def _refusal(self, wait: float) -> RateLimited:
        assert self._files is not None
        limit = f"{self._files.count} files"
        if self._max_bytes is not None:
            limit += f" or {self._max_bytes >> 20} MB"
        return RateLimited(
            f"at most {limit} may be uploaded per {self._files.window_seconds} s",
            code="upload_limit",
            retry_after=max(1, math.ceil(wait)),
        )
