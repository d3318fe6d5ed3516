"""Redaction is bounded in time: a configured pattern that backtracks catastrophically is refused at start-up, the
built-in patterns are linear, matching runs off the event loop, and a text not redacted in time is withheld.

The attacks: with ``ORC_REDACT_PATTERNS='(a+)+$'`` one answer stalled every caller for 37 s; the built-in
credentials-in-URLs pattern was quadratic, and 20 long answers stalled everyone for 6 s."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable
from typing import Any

import pytest

from orc.errors import ConfigurationError
from orc.handoff.redaction import BUILT_IN_PATTERNS, REDACTED, Redactor, probe
from orc.http import create_app
from orc.settings import Settings
from tests.support import lifespan

# Long answers made of what the credentials-in-URLs pattern reads as a scheme, then a scheme separator.
LONG_ANSWERS = ["a." * 10_000 + "://" for _ in range(20)]


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(\w+\s?)*$", r"(a|aa)*$", r"\d+\d+$", r"([a-z]+\.)+com"])
async def test_a_configured_pattern_that_backtracks_catastrophically_stops_the_server_from_starting(
    pattern: str,
) -> None:
    app = create_app(Settings(redact_patterns=[pattern]))

    with pytest.raises(ConfigurationError, match="backtracks catastrophically") as refused:
        async with lifespan(app):
            pass
    assert repr(pattern) in refused.value.message


def test_linear_configured_patterns_are_accepted() -> None:
    for pattern in (r"EMP-\d{6}", r"(?i)internal-token-\w+", r"\bACME-[A-Z0-9]{8}\b"):
        probe(pattern)


@pytest.mark.parametrize("pattern", BUILT_IN_PATTERNS)
def test_every_built_in_pattern_passes_the_start_up_probe(pattern: str) -> None:
    probe(pattern)


def test_twenty_long_answers_are_redacted_in_time_not_withheld() -> None:
    redacted = Redactor().redact_texts([*LONG_ANSWERS, "postgres://admin:hunter2secret@db.internal/app"])

    assert redacted[:-1] == [(answer, 0) for answer in LONG_ANSWERS]  # read whole, within the time limit
    assert redacted[-1] == (f"{REDACTED}db.internal/app", 1)


def test_texts_not_redacted_within_the_time_limit_are_withheld_whole(caplog: pytest.LogCaptureFixture) -> None:
    slow = Redactor(seconds=0.000_001)
    with caplog.at_level(logging.WARNING, logger="orc.handoff.redaction"):
        redacted = slow.redact_texts(["the key is sk-abcdefghijklmnopqrstuvwx " * 2000, None, "plain"])

    assert redacted == [(REDACTED, 1), (None, 0), (REDACTED, 1)]
    assert "ran out of time" in caplog.text


class _RecordingExecutor(concurrent.futures.ThreadPoolExecutor):
    """The loop's default executor, noting what it was given to run."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.ran: list[str] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        self.ran.append(repr((fn, args)))  # asyncio.to_thread submits a context's run of the call
        return super().submit(fn, *args, **kwargs)


async def test_matching_runs_in_a_worker_thread_not_on_the_event_loop() -> None:
    executor = _RecordingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    try:
        redacted = await Redactor().redact_all(["token sk-abcdefghijklmnopqrstuvwx here", None])
    finally:
        executor.shutdown()

    assert redacted == [(f"token {REDACTED} here", 1), (None, 0)]
    assert any("redact_texts" in name for name in executor.ran), executor.ran
