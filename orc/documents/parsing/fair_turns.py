"""Slots shared fairly across organizations: when all are taken, the next free one goes to the organization
that has had the fewest, not to whoever queued first; and spare slots that the busiest organization cannot take.

A plain semaphore serves waiters in arrival order, so one organization that uploads a hundred documents (or one
slow one after another) holds every other organization behind its backlog. Here each organization waits in its
own line, and a freed slot goes to the waiting organization served least while it has been active; one that
just arrived starts one turn behind the least served, so it goes next. Another organization's document waits for
at most the ones already running, never for the backlog — and with a spare slot, not even for those, however long
one organization's documents take.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter, deque
from collections.abc import AsyncIterator

__all__ = ["FairTurns", "organization_of"]


def organization_of(partition_key: str) -> str:
    """The organization a catalog partition or blob path belongs to (its first segment)."""
    return partition_key.split("/", 1)[0]


class FairTurns:
    """At most ``capacity`` holders per organization, ``capacity + spare`` in all; a freed slot goes to the waiting
    organization served least.

    ``spare`` slots are for organizations other than the busiest: when one organization holds ``capacity`` slots
    with slow work (a parse that runs to its deadline, four of them queued behind it), another's document starts
    at once in a spare slot instead of waiting for one of those to end. A single organization never uses them, so
    its own throughput and the resources it can take are those of ``capacity``.
    """

    def __init__(self, capacity: int, *, spare: int = 0) -> None:
        if capacity < 1 or spare < 0:
            raise ValueError("capacity must be at least 1 and spare at least 0")
        self._capacity = capacity
        self._total = capacity + spare
        self._busy = 0
        self._lines: dict[str, deque[asyncio.Future[None]]] = {}
        self._holding: Counter[str] = Counter()
        self._served: dict[str, int] = {}  # turns per active organization (holding or waiting)

    @property
    def waiting(self) -> int:
        """How many holders are waiting for a slot."""
        return sum(len(line) for line in self._lines.values())

    @contextlib.asynccontextmanager
    async def turn(self, organization: str) -> AsyncIterator[None]:
        """Hold one slot for ``organization`` while the block runs."""
        await self._acquire(organization)
        try:
            yield
        finally:
            self._release(organization)

    async def _acquire(self, organization: str) -> None:
        self._activate(organization)
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._lines.setdefault(organization, deque()).append(granted)
        self._dispatch()
        try:
            await granted  # at once when a slot was free for it: awaiting a done future does not yield
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release(organization)  # handed a slot just as it was cancelled: pass it on
            else:
                self._withdraw(organization, granted)
            raise

    def _activate(self, organization: str) -> None:
        if organization not in self._served:
            # A newcomer goes before everyone active, then takes its turn with them (no credit for idle time).
            self._served[organization] = max(min(self._served.values(), default=0) - 1, 0)

    def _dispatch(self) -> None:
        """Hand free slots to waiters: the first of the least served organization that is under its capacity."""
        while self._busy < self._total:
            eligible = [waiting for waiting in self._lines if self._holding[waiting] < self._capacity]
            if not eligible:
                return
            chosen = min(eligible, key=lambda waiting: self._served[waiting])  # ties: the earliest line
            line = self._lines[chosen]
            granted = line.popleft()
            if not line:
                del self._lines[chosen]
            if granted.done():  # cancelled while it waited
                self._forget_if_idle(chosen)
                continue
            granted.set_result(None)
            self._busy += 1
            self._holding[chosen] += 1
            self._served[chosen] += 1

    def _withdraw(self, organization: str, granted: asyncio.Future[None]) -> None:
        line = self._lines.get(organization)
        if line is not None:
            with contextlib.suppress(ValueError):
                line.remove(granted)
            if not line:
                del self._lines[organization]
        self._forget_if_idle(organization)

    def _release(self, organization: str) -> None:
        """Free ``organization``'s slot and hand it on."""
        self._busy -= 1
        self._holding[organization] -= 1
        if not self._holding[organization]:
            del self._holding[organization]
        self._forget_if_idle(organization)
        self._dispatch()

    def _forget_if_idle(self, organization: str) -> None:
        if organization not in self._holding and organization not in self._lines:
            self._served.pop(organization, None)
