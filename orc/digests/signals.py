"""Wake-ups for status watchers: one counter and one event per session, in this process.

Whoever changes a session's files or digest statuses calls :meth:`SessionSignals.notify`; a watcher (the SSE
stream) remembers the counter it last saw and :meth:`SessionSignals.wait` returns as soon as it moves, or after a
timeout so the watcher can re-read storage for changes made by other instances. Nothing polls in a tight loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(eq=False)
class _Signal:
    version: int = 0
    event: asyncio.Event = field(default_factory=asyncio.Event)


class SessionSignals:
    """Per-session change counters that watchers can wait on."""

    def __init__(self) -> None:
        # Weak values: a session nobody watches keeps no signal alive.
        self._signals: weakref.WeakValueDictionary[str, _Signal] = weakref.WeakValueDictionary()

    def _signal(self, key: str) -> _Signal:
        signal = self._signals.get(key)
        if signal is None:
            signal = self._signals[key] = _Signal()
        return signal

    def version(self, key: str) -> int:
        """The session's change counter now (pass it to :meth:`wait`)."""
        return self._signal(key).version

    @contextlib.contextmanager
    def watching(self, key: str) -> Iterator[int]:
        """Keep the session's counter while the block runs; yields the counter now (pass it to :meth:`wait`).

        A watcher re-reads storage between two waits: held, the counter still moves for a change notified then, so
        the next wait returns at once instead of missing it (and never restarts from 0 to force an extra read)."""
        signal = self._signal(key)
        yield signal.version

    def notify(self, key: str) -> None:
        """Something about the session changed: wake every watcher."""
        signal = self._signals.get(key)
        if signal is None:
            return
        signal.version += 1
        signal.event.set()
        signal.event = asyncio.Event()

    async def wait(self, key: str, seen: int, seconds: float) -> int:
        """Wait until the counter differs from ``seen`` or ``seconds`` pass; returns the counter."""
        signal = self._signal(key)
        if signal.version == seen:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(signal.event.wait(), seconds)
        return signal.version
