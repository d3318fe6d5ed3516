"""Redaction bounded in time (issue 36): what the two redaction attacks cost the event loop, before and after.

1. The built-in credentials-in-URLs pattern over 20 long answers (``"a." * 5_000 + "://"``, 10 KB, what the quadratic
   form re-scanned from every word): CPU of the old pattern on Python's ``re`` against the linear one on ``regex``.
2. The longest stall of the event loop (a 1 ms ticker's largest gap) while a listing of those 20 answers is
   redacted: the old way (``re``, on the loop) against :meth:`Redactor.redact_all` (a worker thread, no GIL held
   while matching). Target: the loop never stalls 50 ms longer than it does with nothing running.
3. ``ORC_REDACT_PATTERNS='(a+)+$'``: refused at start-up (how long the probe took), instead of one answer stalling
   every caller.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections.abc import Awaitable, Callable

from bench.common import BenchResult, Check
from bench.documents_common import exit_with, standalone
from orc.errors import ConfigurationError
from orc.handoff.redaction import BUILT_IN_PATTERNS, REDACTED, Redactor, probe

OLD_CREDENTIALS_IN_URLS = r"(?i)\b[a-z][a-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@"
ANSWERS = ["a." * 5_000 + "://" for _ in range(20)]
STALL_LIMIT_MS = 50.0


def configure(parser: argparse.ArgumentParser) -> None:
    """No options beyond the common ones."""


async def _longest_stall_ms(work: Callable[[], Awaitable[object]]) -> float:
    """The largest gap between ticks of a 1 ms ticker on the loop while ``work`` runs."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append((now - last) * 1000)
            last = now

    ticking = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    await work()
    done.set()
    await ticking
    return max(gaps)


async def run(args: argparse.Namespace) -> BenchResult:
    """The three measures."""
    result = BenchResult(name="redaction")
    old = re.compile(OLD_CREDENTIALS_IN_URLS)
    started = time.process_time()
    for answer in ANSWERS:
        old.sub(REDACTED, answer)
    old_cpu = (time.process_time() - started) * 1000
    redactor = Redactor()
    started = time.process_time()
    redacted = redactor.redact_texts(ANSWERS)
    new_cpu = (time.process_time() - started) * 1000
    assert redacted == [(answer, 0) for answer in ANSWERS]
    result.rows.append({"measure": "20 long answers, credentials-in-URLs pattern (old, re)", "ms": round(old_cpu, 1)})
    result.rows.append({"measure": "20 long answers, every built-in pattern (new, regex)", "ms": round(new_cpu, 1)})

    async def on_the_loop() -> None:
        for answer in ANSWERS:
            for pattern in (OLD_CREDENTIALS_IN_URLS, *BUILT_IN_PATTERNS[3:]):
                re.sub(pattern, REDACTED, answer)

    async def off_the_loop() -> None:
        await redactor.redact_all(ANSWERS)

    async def nothing() -> None:
        await asyncio.sleep(0.5)

    idle = await _longest_stall_ms(nothing)
    before = await _longest_stall_ms(on_the_loop)
    after = await _longest_stall_ms(off_the_loop)
    result.rows.append({"measure": "longest event-loop stall, nothing redacted (the host's own)", "ms": round(idle, 1)})
    result.rows.append({"measure": "longest event-loop stall, old (re on the loop)", "ms": round(before, 1)})
    result.rows.append({"measure": "longest event-loop stall, new (worker thread)", "ms": round(after, 1)})
    started = time.process_time()
    try:
        probe(r"(a+)+$")
        refused = False
    except ConfigurationError:
        refused = True
    probe_ms = (time.process_time() - started) * 1000
    result.rows.append({"measure": "ORC_REDACT_PATTERNS='(a+)+$' refused at start-up after", "ms": round(probe_ms, 1)})
    # A loaded host stalls a 1 ms ticker by itself: the limit is on top of that.
    result.checks.append(Check("longest event-loop stall while redacting", round(after, 1), idle + STALL_LIMIT_MS))
    result.checks.append(Check("catastrophic pattern accepted", 0.0 if refused else 1.0, 0.0, unit=""))
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
