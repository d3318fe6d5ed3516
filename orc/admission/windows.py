"""Counted time windows, written once for every limited operation: per principal and counter, the count of the
current fixed window lives in the configured document store (collection ``quotas``, one item per principal and
counter, in the principal's partition), changed by ETag-conditional writes, so every instance and worker counts
against the same numbers. A counter item holds only the current window: a new window overwrites it.

Once a window is full, the process remembers it until the window ends and refuses without touching the store."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from orc.principal import Principal
from orc.storage.ports import DocumentCollection, StoredItem
from orc.storage.updates import update_item

DAY = 86400
MAX_REMEMBERED = 4096
"""Principals remembered (refusals, full windows) before the ones that no longer matter are forgotten."""


class Windows:
    """The counters of every limited operation (``None`` collection: nothing is counted, nothing refused)."""

    def __init__(self, collection: DocumentCollection | None, clock: Callable[[], float]) -> None:
        self.collection = collection
        self.clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        self._full_until: dict[tuple[str, str], float] = {}

    def lock(self, principal: Principal) -> asyncio.Lock:
        """The principal's counters change one at a time in this process: a flood from one caller does not turn
        into an ETag retry storm."""
        key = principal.partition_key
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def full_for(self, principal: Principal, counter: str, now: float) -> float | None:
        """Seconds left of ``counter``'s window when it is known to be full; ``None`` otherwise."""
        until = self._full_until.get((principal.partition_key, counter), 0.0)
        return until - now if until > now else None

    def remember_full(self, principal: Principal, counter: str, until: float) -> None:
        """Refuse ``counter`` from memory until ``until`` (its window's end)."""
        self._full_until[(principal.partition_key, counter)] = until
        if len(self._full_until) > MAX_REMEMBERED:
            now = self.clock()
            self._full_until = {entry: end for entry, end in self._full_until.items() if end > now}

    async def read(self, principal: Principal, counter: str, window_seconds: int, now: float) -> int:
        """The count of ``counter`` in the window holding ``now``."""
        assert self.collection is not None
        item = await self.collection.get(principal.partition_key, counter)
        if item is None or item.body.get("window") != now - now % window_seconds:
            return 0
        return int(item.body.get("count", 0))

    async def add(
        self, principal: Principal, counter: str, window_seconds: int, amount: int, *, cap: int | None, now: float
    ) -> bool:
        """Add ``amount`` to ``counter`` in the window holding ``now``; False (nothing added) when that would pass
        ``cap``. Conditional writes make concurrent instances count each operation once."""
        assert self.collection is not None
        start = now - now % window_seconds

        def added(item: StoredItem | None) -> dict[str, Any] | None:
            current = 0 if item is None or item.body.get("window") != start else int(item.body["count"])
            if cap is not None and current + amount > cap:
                return None
            return {"window": start, "count": current + amount}

        busy = "the quota counter is contended; retry"
        return await update_item(self.collection, principal.partition_key, counter, added, busy=busy) is not None
