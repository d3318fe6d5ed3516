"""Wake-ups for status watchers: a watcher misses no change, even one notified while it is between two waits."""

from __future__ import annotations

import asyncio

from orc.digests.signals import SessionSignals


async def test_a_change_notified_while_the_watcher_is_between_two_waits_wakes_its_next_wait_at_once() -> None:
    signals = SessionSignals()
    with signals.watching("s") as seen:
        signals.notify("s")  # while the watcher re-reads storage, inside none of its waits
        # Half the wait's own timeout: only the held counter makes the wait return in time.
        async with asyncio.timeout(30):
            woken = await signals.wait("s", seen, 60)

    assert woken == seen + 1


async def test_a_signal_nobody_watches_any_more_is_forgotten() -> None:
    signals = SessionSignals()
    with signals.watching("s"):
        signals.notify("s")

    assert signals.version("s") == 0
