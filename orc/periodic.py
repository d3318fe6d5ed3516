"""Background work repeated for the life of a task: the embedded process's sweepers and a processing job's lease
heartbeat."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable


async def every(
    seconds: float, work: Callable[[], Awaitable[object]], *, failure: str, log: logging.Logger, at_once: bool
) -> None:
    """Await ``work`` every ``seconds`` (the first time at once or after ``seconds``) until the task is cancelled.

    A failure is logged at WARNING as ``"{failure}: <error type>"`` and the next round tries again. A cancellation
    always ends the loop, even one that surfaces from ``work`` as another error (a storage call cancelled half-way
    may fail on its way out): otherwise the task would sleep on, and whoever stops it would wait for ever.
    """
    if not at_once:
        await asyncio.sleep(seconds)
    while True:
        try:
            await work()
        except Exception as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise asyncio.CancelledError from exc
            log.warning("%s: %s", failure, type(exc).__name__)
        await asyncio.sleep(seconds)
