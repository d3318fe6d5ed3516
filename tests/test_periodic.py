"""The embedded process's sweepers: a failed round is logged and the next one runs; a cancellation always stops
them, even one that the work turns into another error on its way out."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest

from orc.errors import StorageUnavailable
from orc.periodic import every

log = logging.getLogger("tests.periodic")


async def test_a_failed_round_is_logged_and_the_next_round_runs(caplog: pytest.LogCaptureFixture) -> None:
    rounds: list[int] = []
    second = asyncio.Event()

    async def work() -> None:
        rounds.append(len(rounds) + 1)
        if len(rounds) == 1:
            raise StorageUnavailable("the embedded database is busy")
        second.set()

    sweeping = asyncio.create_task(every(0, work, failure="sweeping failed", log=log, at_once=True))
    try:
        await asyncio.wait_for(second.wait(), 120)  # bounds a sweeper that stops; the second round runs at once
    finally:
        sweeping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sweeping

    assert rounds[:2] == [1, 2]
    assert "sweeping failed: StorageUnavailable" in caplog.text
    assert "busy" not in caplog.text  # the type, not the message: a message may carry what a log must not


async def test_a_sweeper_cancelled_while_its_work_turns_the_cancellation_into_an_error_stops() -> None:
    working = asyncio.Event()

    async def work() -> None:
        working.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise StorageUnavailable("failed on its way out") from None

    sweeping = asyncio.create_task(every(3600, work, failure="sweeping failed", log=log, at_once=True))
    await working.wait()
    sweeping.cancel()

    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(sweeping, 120)


async def test_a_sweeper_that_does_not_start_at_once_waits_its_period_first() -> None:
    ran = asyncio.Event()

    async def work() -> None:
        ran.set()

    sweeping = asyncio.create_task(every(3600, work, failure="sweeping failed", log=log, at_once=False))
    await asyncio.sleep(0)
    sweeping.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await sweeping

    assert not ran.is_set()
