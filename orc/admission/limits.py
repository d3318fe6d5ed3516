"""A served process's admission: per-principal limits on every kind of operation, over one set of counted windows
(:mod:`orc.admission.windows`), one place that holds concurrent slots, and one fairness gate
(:mod:`orc.admission.fairness`).

- turns: at most ``concurrent_turns`` at once (in process: a turn holds its slot while it runs), ``turn_rate`` per
  window and ``daily_tokens`` model tokens a day (counted after each turn);
- uploads and files supplied to a context request: at most ``concurrent_uploads`` at once, ``upload_rate`` files and
  ``upload_bytes`` bytes per window, refused with 429 ``upload_limit`` before anything is stored;
- exports: one at a time, ``export_rate`` per window (429 ``export_limit``) before anything is rendered;
- digest passes: none while the principal's turns are refused (its window full, its day's tokens spent).

``None`` limits are off. Every refusal makes its principal *flooding* and is held a moment before it is raised.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from orc.admission.fairness import Fairness, TurnSlot
from orc.admission.port import FREE, Admitted, Gate, Operation
from orc.admission.windows import DAY, Windows
from orc.contracts import Usage
from orc.errors import RateLimited, TokenQuotaExceeded, TooManyConcurrentTurns, TooManyRequests
from orc.principal import Principal
from orc.rates import RateLimit
from orc.storage.ports import DocumentCollection

MAX_CONCURRENT_UPLOADS = 4
"""Uploads one principal may have being stored and processed at once, per process (as concurrent turns): a flood of
uploads then costs the others at most that many uploads' work at a time."""
_RATE, _TOKENS, _FILES, _BYTES, _EXPORTS = "rate", "tokens", "upload_files", "upload_bytes", "exports"


class _Held:
    """An admitted operation holding one of its principal's concurrent slots (a turn's is also its gate)."""

    __slots__ = ("_charge", "_release", "gate")

    def __init__(
        self, release: Callable[[], None], gate: Gate | None = None, charge: Callable[[int], Any] | None = None
    ) -> None:
        self._release = release
        self._charge = charge
        self.gate = gate

    async def charge(self, usage: Usage) -> None:
        """Add a turn's tokens to its principal's day."""
        if self._charge is not None:
            await self._charge(usage.total_tokens)

    def release(self) -> None:
        """Free the slot (idempotent)."""
        release, self._release = self._release, _nothing
        release()

    async def __aenter__(self) -> _Held:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()


def _nothing() -> None:
    pass


class Limits:
    """Admits or refuses every operation of a principal (implements :class:`orc.admission.Admission`)."""

    def __init__(
        self,
        collection: DocumentCollection | None,
        *,
        turn_rate: RateLimit | None = None,
        daily_tokens: int | None = None,
        concurrent_turns: int | None = None,
        upload_rate: RateLimit | None = None,
        upload_bytes: int | None = None,
        export_rate: RateLimit | None = None,
        concurrent_uploads: int | None = None,
        clock: Callable[[], float] = time.time,
        fairness: Fairness | None = None,
    ) -> None:
        self._windows = Windows(collection, clock)
        self._fairness = fairness or Fairness(clock)
        self._turn_rate = turn_rate
        self._daily_tokens = daily_tokens
        self._concurrent_turns = concurrent_turns
        self._upload_rate = upload_rate
        self._upload_bytes = upload_bytes
        self._export_rate = export_rate
        self._concurrent_uploads = concurrent_uploads
        self._in_flight: dict[str, int] = {}  # uploads (and "<key>#exports") running now, per principal

    @property
    def enabled(self) -> bool:
        """Whether any limit applies."""
        return any(
            limit is not None
            for limit in (self._turn_rate, self._daily_tokens, self._concurrent_turns, self._upload_rate)
        )

    async def admit(self, principal: Principal, operation: Operation, *, files: int = 0, size: int = 0) -> Admitted:
        """Admit one ``operation`` or raise its refusal (held a moment first when it is a limit's)."""
        try:
            if operation == "turn":
                return await self._turn(principal)
            if operation in ("upload", "supply"):
                return await self._upload(principal, files, size)
            if operation == "export":
                return await self._export(principal)
            await self._digest(principal)
            return FREE
        except TooManyRequests as refusal:
            if operation != "digest":
                self._fairness.refused(principal.partition_key)
                if operation != "turn":
                    await self._fairness.hold(refusal)
            raise

    def refuse_early(self, principal: Principal) -> None:
        """The refusal known from memory (a full concurrency cap, a turn window known to be full)."""
        try:
            self._turn_cap(principal)
            self._known_full(principal, self._windows.clock())
        except TooManyRequests:
            self._fairness.refused(principal.partition_key)
            raise

    async def hold_refusal(self, refusal: BaseException) -> None:
        """Hold a 429 up to a second (never longer than its ``Retry-After``)."""
        await self._fairness.hold(refusal)

    def turn_slot(self, principal: Principal) -> TurnSlot:
        """Take one of the principal's concurrent-turn slots; :class:`TooManyConcurrentTurns` (refused at once rather
        than queued: a queue would let one caller's backlog hold the process's memory) when none is free."""
        try:
            self._turn_cap(principal)
        except TooManyRequests:
            self._fairness.refused(principal.partition_key)
            raise
        return self._fairness.started(principal.partition_key)

    # -- turns ---------------------------------------------------------------------------------------------------

    async def _turn(self, principal: Principal) -> Admitted:
        # The cap first, in memory: a caller over it is refused without touching the store.
        slot = self.turn_slot(principal)
        try:
            await self._count_turn(principal)
        except BaseException:
            slot.release()
            raise
        return _Held(slot.release, slot, lambda tokens: self._charge(principal, tokens))

    def _turn_cap(self, principal: Principal) -> None:
        cap = self._concurrent_turns
        if cap is not None and self._fairness.running.get(principal.partition_key, 0) >= cap:
            raise TooManyConcurrentTurns(f"at most {cap} turns may run at once; wait for one to finish", retry_after=1)

    def _known_full(self, principal: Principal, now: float) -> None:
        for counter in (_TOKENS, _RATE):
            if (left := self._windows.full_for(principal, counter, now)) is not None:
                raise self._turn_refusal(counter, left)

    async def _count_turn(self, principal: Principal) -> None:
        windows = self._windows
        if windows.collection is None or (self._turn_rate is None and self._daily_tokens is None):
            return
        now = windows.clock()
        self._known_full(principal, now)
        async with windows.lock(principal):
            if (
                self._daily_tokens is not None
                and await windows.read(principal, _TOKENS, DAY, now) >= self._daily_tokens
            ):
                windows.remember_full(principal, _TOKENS, now - now % DAY + DAY)
                raise self._turn_refusal(_TOKENS, DAY - now % DAY)
            rate = self._turn_rate
            if rate is not None and not await windows.add(
                principal, _RATE, rate.window_seconds, 1, cap=rate.count, now=now
            ):
                left = rate.window_seconds - now % rate.window_seconds
                windows.remember_full(principal, _RATE, now + left)
                raise self._turn_refusal(_RATE, left)

    async def _charge(self, principal: Principal, tokens: int) -> None:
        windows = self._windows
        if windows.collection is None or self._daily_tokens is None or tokens <= 0:
            return
        async with windows.lock(principal):
            await windows.add(principal, _TOKENS, DAY, tokens, cap=None, now=windows.clock())

    def _turn_refusal(self, counter: str, wait: float) -> RateLimited | TokenQuotaExceeded:
        seconds = max(1, math.ceil(wait))
        if counter == _TOKENS:
            return TokenQuotaExceeded(
                f"the daily model-token quota ({self._daily_tokens}) is used up", retry_after=seconds
            )
        assert self._turn_rate is not None
        rate = self._turn_rate
        return RateLimited(f"at most {rate.count} requests per {rate.window_seconds} s", retry_after=seconds)

    # -- digests -------------------------------------------------------------------------------------------------

    async def _digest(self, principal: Principal) -> None:
        """Refused while the principal's turns are: digests are started by uploads, not asked for, and must not keep
        the model busy for a caller whose turns are refused. Read from the store: the process that refused the
        principal's turns may be another one."""
        windows = self._windows
        now = windows.clock()
        self._known_full(principal, now)
        if windows.collection is None:
            return
        if self._daily_tokens is not None and await windows.read(principal, _TOKENS, DAY, now) >= self._daily_tokens:
            raise self._turn_refusal(_TOKENS, DAY - now % DAY)
        rate = self._turn_rate
        if rate is not None and await windows.read(principal, _RATE, rate.window_seconds, now) >= rate.count:
            raise self._turn_refusal(_RATE, rate.window_seconds - now % rate.window_seconds)

    # -- uploads, supplies and exports -----------------------------------------------------------------------------

    async def _upload(self, principal: Principal, files: int, size: int) -> Admitted:
        key = principal.partition_key
        cap = self._concurrent_uploads
        if cap is not None and self._in_flight.get(key, 0) >= cap:
            raise TooManyRequests(
                f"at most {cap} uploads may run at once; wait for one to finish",
                code="too_many_concurrent_uploads",
                retry_after=1,
            )
        release = self._take(key)  # before the window's store round trip, so that concurrent uploads see it
        try:
            await self._count_upload(principal, files, size)
            await self._fairness.give_way(key)
        except BaseException:
            release()
            raise
        return _Held(release)

    async def _count_upload(self, principal: Principal, files: int, size: int) -> None:
        windows, rate = self._windows, self._upload_rate
        if windows.collection is None or rate is None or files <= 0:
            return
        now = windows.clock()
        window = rate.window_seconds
        left = window - now % window
        if windows.full_for(principal, _FILES, now) is not None:
            raise self._upload_refusal(left)
        async with windows.lock(principal):
            limit = self._upload_bytes
            if limit is not None and not await windows.add(principal, _BYTES, window, size, cap=limit, now=now):
                raise self._upload_refusal(left)  # a smaller file may still fit: not remembered
            if not await windows.add(principal, _FILES, window, files, cap=rate.count, now=now):
                if limit is not None:  # the bytes were counted for files that are refused: give them back
                    await windows.add(principal, _BYTES, window, -size, cap=None, now=now)
                if files == 1:  # not even one more file: the window is full, refused from memory until it ends
                    windows.remember_full(principal, _FILES, now + left)
                raise self._upload_refusal(left)

    def _upload_refusal(self, wait: float) -> RateLimited:
        assert self._upload_rate is not None
        limit = f"{self._upload_rate.count} files"
        if self._upload_bytes is not None:
            limit += f" or {self._upload_bytes >> 20} MB"
        return RateLimited(
            f"at most {limit} may be uploaded per {self._upload_rate.window_seconds} s",
            code="upload_limit",
            retry_after=max(1, math.ceil(wait)),
        )

    async def _export(self, principal: Principal) -> Admitted:
        windows = self._windows
        key = f"{principal.partition_key}#exports"
        if windows.collection is not None and key in self._in_flight:
            raise TooManyRequests(
                "one export at a time; wait for the other to finish", code="too_many_concurrent_exports", retry_after=1
            )
        release = self._take(key)  # before the window's store round trip: a concurrent export sees it
        try:
            rate = self._export_rate
            if windows.collection is not None and rate is not None:
                now = windows.clock()
                left = rate.window_seconds - now % rate.window_seconds
                if windows.full_for(principal, _EXPORTS, now) is not None or not await windows.add(
                    principal, _EXPORTS, rate.window_seconds, 1, cap=rate.count, now=now
                ):
                    windows.remember_full(principal, _EXPORTS, now + left)
                    raise RateLimited(
                        f"at most {rate.count} exports per {rate.window_seconds} s",
                        code="export_limit",
                        retry_after=max(1, math.ceil(left)),
                    )
        except BaseException:
            release()
            raise
        return _Held(release)

    def _take(self, key: str) -> Callable[[], None]:
        self._in_flight[key] = self._in_flight.get(key, 0) + 1

        def release() -> None:
            left = self._in_flight[key] - 1
            if left:
                self._in_flight[key] = left
            else:
                del self._in_flight[key]

        return release
