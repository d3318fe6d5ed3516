"""Real in-memory stores whose calls are counted, for tests that assert "no storage call was made" or inject faults."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from asgi_lifespan import LifespanManager

from orc.composition import Stores
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.testing.storage import ObservedBlobStore, ObservedProvider


class CallCounter:
    """Counts storage calls across every observed store, and injects faults into chosen calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self._faults: dict[str, tuple[Exception, int | None]] = {}

    def reset(self) -> None:
        self.calls.clear()

    def fail(self, call: str, error: Exception, *, times: int | None = None) -> None:
        """Make ``call`` (e.g. ``"conversations.create"``) raise ``error``, ``times`` times or forever."""
        self._faults[call] = (error, times)

    @contextmanager
    def observe(self, call: str) -> Iterator[None]:
        """Record ``call``; raise its injected fault, if any, before it reaches the store."""
        self.calls.append(call)
        fault = self._faults.get(call)
        if fault is not None:
            error, times = fault
            if times is not None:
                if times <= 1:
                    del self._faults[call]
                else:
                    self._faults[call] = (error, times - 1)
            raise error
        yield


def counting_stores() -> tuple[Stores, CallCounter]:
    """Memory stores whose every call is counted."""
    counter = CallCounter()
    stores = Stores(
        collections=ObservedProvider(MemoryCollectionProvider(), counter.observe),
        blobs=ObservedBlobStore(MemoryBlobStore(), counter.observe),
    )
    return stores, counter


LIFESPAN_SECONDS = 120.0
"""asgi-lifespan's own bound is 5 s, which an app whose start-up spawns the extraction workers misses on a loaded
machine; the per-test timeout still bounds a start-up that hangs."""


def lifespan(app: Any) -> LifespanManager:
    """Run ``app``'s lifespan (start-up now, shutdown on exit) with bounds a loaded machine meets."""
    return LifespanManager(app, startup_timeout=LIFESPAN_SECONDS, shutdown_timeout=LIFESPAN_SECONDS)
