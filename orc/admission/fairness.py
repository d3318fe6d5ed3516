"""Fair turns, written once for every kind of operation: what a principal this process refused in the last
:data:`FLOODING_SECONDS` (a turn, an upload, a supply, an export) is *flooding*, and two things slow it down rather
than everyone else:

- its turns give way at their yield points (:class:`TurnSlot`, the turn's gate): before each graph node, such a turn
  waits while another caller's turn runs, and for :data:`ANTICIPATION_SECONDS` after one ends (a caller asking one
  question after another is between two turns, not gone), at most :data:`MAX_YIELD_SECONDS` per node: slowed, never
  starved; and its steps run one at a time; its admitted uploads wait the same way before they are stored;
- a refusal is held up to :data:`REFUSAL_HOLD_SECONDS` before it is sent (at most :data:`MAX_HELD_REFUSALS` at once),
  so a client that retries as soon as it is refused sends one request a second per connection instead of thousands.

Measured with ``python -m bench.flood`` (``bench/README.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

from orc.admission.windows import MAX_REMEMBERED
from orc.errors import RateLimited, TokenQuotaExceeded, TooManyConcurrentTurns, TooManyRequests

FLOODING_SECONDS = 5.0
"""How long after a refusal a caller's turns give way to other callers' turns."""
MAX_YIELD_SECONDS = 2.0
"""The longest a flooding caller's turn waits at one yield point."""
ANTICIPATION_SECONDS = 0.025
"""After another caller's last running turn ends, how long flooding turns still give way (its next turn comes)."""
REFUSAL_HOLD_SECONDS = 1.0
"""The longest a refusal is held before it is sent (never longer than its ``Retry-After``)."""
MAX_HELD_REFUSALS = 1024
"""Refusals held at once per process; beyond them refusals are sent at once (each holds a connection)."""
_MAX_ANTICIPATED = 256
"""Callers between two turns remembered before the ones whose anticipation ended are forgotten."""
_HELD = (TooManyConcurrentTurns, RateLimited, TokenQuotaExceeded, TooManyRequests)


class Fairness:
    """Who is flooding, which turns run, and the waits that make a flood give way (the bounds default to this
    module's constants; tests shorten them)."""

    def __init__(
        self,
        clock: Callable[[], float] = time.time,
        *,
        flooding_seconds: float = FLOODING_SECONDS,
        max_yield_seconds: float = MAX_YIELD_SECONDS,
        refusal_hold_seconds: float = REFUSAL_HOLD_SECONDS,
        max_held_refusals: int = MAX_HELD_REFUSALS,
        anticipation_seconds: float = ANTICIPATION_SECONDS,
    ) -> None:
        self._clock = clock
        self._flooding_seconds = flooding_seconds
        self._max_yield = max_yield_seconds
        self._refusal_hold = refusal_hold_seconds
        self._max_held = max_held_refusals
        self._anticipation = anticipation_seconds
        self.running: dict[str, int] = {}
        """Turns running now, per principal (its partition key)."""
        self._refused_at: dict[str, float] = {}
        self._forget_beyond = MAX_REMEMBERED
        self._anticipated: dict[str, float] = {}
        self._lanes: dict[str, asyncio.Lock] = {}
        self._turn_ended = asyncio.Event()
        self._held = 0

    def refused(self, key: str) -> None:
        """Note a refusal of the principal ``key``: it is flooding for a while."""
        now = self._clock()
        self._refused_at[key] = now
        if len(self._refused_at) > self._forget_beyond:
            horizon = now - self._flooding_seconds
            self._refused_at = {other: at for other, at in self._refused_at.items() if at >= horizon}
            # Amortized: when most refusals are recent, the next clean-up waits for twice as many.
            self._forget_beyond = max(MAX_REMEMBERED, 2 * len(self._refused_at))

    def flooding(self, key: str) -> bool:
        """Whether the principal ``key`` was refused in the last :data:`FLOODING_SECONDS`."""
        refused = self._refused_at.get(key)
        if refused is None:
            return False
        if self._clock() - refused < self._flooding_seconds:
            return True
        del self._refused_at[key]
        return False

    async def hold(self, refusal: BaseException) -> None:
        """Hold a limit's refusal up to :data:`REFUSAL_HOLD_SECONDS` (its ``Retry-After`` at most) before it is sent,
        unless :data:`MAX_HELD_REFUSALS` are held already; other errors are not held."""
        retry_after = getattr(refusal, "retry_after", None)
        if not isinstance(refusal, _HELD) or retry_after is None or self._held >= self._max_held:
            return
        self._held += 1
        try:
            await asyncio.sleep(min(self._refusal_hold, retry_after))
        finally:
            self._held -= 1

    def started(self, key: str) -> TurnSlot:
        """A turn of the principal ``key`` runs (its slot was taken)."""
        self.running[key] = self.running.get(key, 0) + 1
        return TurnSlot(self, key)

    def ended(self, key: str) -> None:
        """A turn of ``key`` ended: a caller whose turns come one after another is anticipated, and the turns giving
        way look again."""
        left = self.running[key] - 1
        if left:
            self.running[key] = left
        else:
            del self.running[key]
            self._lanes.pop(key, None)  # nobody holds it: the principal has no turn running
            if self._refused_at and not self.flooding(key):
                # Only worth noting while someone is flooding: nobody else asks.
                now = time.monotonic()
                if len(self._anticipated) > _MAX_ANTICIPATED:
                    self._anticipated = {other: until for other, until in self._anticipated.items() if until > now}
                self._anticipated[key] = now + self._anticipation
        self._turn_ended.set()
        self._turn_ended = asyncio.Event()

    async def give_way(self, key: str) -> None:
        """While ``key`` is flooding, wait while another principal's turn runs, or has just ended, at most
        :data:`MAX_YIELD_SECONDS`. Nothing otherwise."""
        if not self.flooding(key):
            return
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

    def lane(self, key: str) -> asyncio.Lock:
        """The principal's one step lane: a flooding caller's steps run one at a time."""
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = asyncio.Lock()
        return lane

    def _others_active(self, key: str) -> float | None:
        """``0`` when another (not flooding) principal's turn runs; the seconds until the latest one's anticipation
        ends when one just finished; ``None`` when nobody else is active."""
        if any(other != key and not self.flooding(other) for other in self.running):
            return 0.0
        now = time.monotonic()
        latest = max((until for other, until in self._anticipated.items() if other != key), default=now)
        if latest <= now:
            for ended in [other for other, until in self._anticipated.items() if until <= now]:
                del self._anticipated[ended]
            return None
        return latest - now


class TurnSlot:
    """One running turn of a principal, and its gate: while its principal is flooding and another principal's turn
    runs, the turn gives way at its yield points. :meth:`release` frees it (once, however often it is called)."""

    __slots__ = ("_fairness", "_held", "_key")

    def __init__(self, fairness: Fairness, key: str) -> None:
        self._fairness = fairness
        self._key = key
        self._held = True

    def release(self) -> None:
        """Free the slot (idempotent: a stream's end and its response's cleanup may both call it)."""
        if self._held:
            self._held = False
            self._fairness.ended(self._key)

    def yielding(self) -> bool:
        """Whether the turn must give way before its next step (never once the slot is released)."""
        return self._held and self._fairness.flooding(self._key)

    @contextlib.asynccontextmanager
    async def step(self) -> AsyncIterator[None]:
        """Wait while other principals' turns run (bounded), then hold the principal's one step lane."""
        async with self._fairness.lane(self._key):
            await self._fairness.give_way(self._key)
            yield

    def __enter__(self) -> TurnSlot:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()
