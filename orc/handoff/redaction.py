"""Redaction of what a user is offered to supply (context-handoff-plan §4.2.1: "size limits, redactions").

Artifacts and one-click suggestions come from earlier answers, digests and documents, which may quote a secret a
user pasted once: a storage key, an API token, a connection string. Offered as they are, one click would copy the
secret into a new prompt and a new stored request. So every text on offer goes through :class:`Redactor` first:
built-in patterns for common secrets (:mod:`orc.secret_patterns`, the ones logs are redacted with), plus a
deployment's own (``ORC_REDACT_PATTERNS``), each match replaced by :data:`REDACTED` (after its label, where the
pattern has one: ``AccountKey=[redacted]``), and the number of replacements reported with the listing or request.

Bounded in time, whatever the patterns and texts:

- the built-in patterns are linear: none re-scans the text from each position it could start at (a lookbehind
  lets a URL's scheme start only once per word, possessive runs never give back what they took);
- a deployment's patterns are probed at start-up (:func:`probe`) on texts made to trigger catastrophic
  backtracking, and one that does not finish in time is refused, naming it;
- matching runs off the event loop (:meth:`Redactor.redact_all`) on the ``regex`` engine, which releases the GIL
  while it matches and stops at a CPU-time limit: a listing or a request's suggestions get
  :data:`REDACTION_SECONDS` in all, and a text not finished in time is withheld whole (:data:`REDACTED`), never
  offered unredacted.

Nothing here reads or writes storage; the patterns are compiled once, when the composition root builds it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence

import regex

from orc.errors import ConfigurationError
from orc.secret_patterns import REDACTED, SECRET_PATTERNS, redaction

log = logging.getLogger(__name__)


REDACTION_SECONDS = 0.5
"""CPU seconds one listing, or one request's suggestions, may spend matching patterns."""

PROBE_SECONDS = 0.05
"""CPU seconds a deployment's pattern may spend on one start-up probe (a linear pattern needs well under 1 ms)."""

PROBE_CHARS = 8000
"""The length of a start-up probe: enough for a quadratic pattern to need seconds, a linear one microseconds."""

BUILT_IN_PATTERNS = SECRET_PATTERNS

# What start-up probes repeat: the characters most patterns are made of, alone, in pairs and with separators.
_PROBE_UNITS = ("a", "0", " ", "aa ", "a.", "a-", "a=", "a:", "a/", "a@", "a_", "a0", "a b", "\n", ".", "-", "@")
_CLASS = regex.compile(r"\[(?:\\.|[^\]])*\]")
_LITERAL_RUN = regex.compile(r"(?:\\[^A-Za-z0-9]|[^\\()\[\]{}?*+|^$.])+")
_MAX_PROBES = 400


def probe(pattern: str) -> None:
    """Refuse ``pattern`` (:class:`~orc.errors.ConfigurationError`, naming it) when it does not compile, or when
    matching it over a start-up probe takes longer than :data:`PROBE_SECONDS`: catastrophic backtracking (``(a+)+$``
    is exponential, ``\\d+\\d+$`` quadratic) that one crafted answer would turn into seconds of matching.

    A probe repeats a common character, or one of the pattern's own, then ends with one of the pattern's literal
    runs (``://``) and a character that makes the match fail late. A probe that finishes proves little; the time
    limit at run time still holds.
    """
    compiled = _compiled(pattern)
    source = _CLASS.sub("", pattern)
    runs = sorted({regex.sub(r"\\(.)", r"\1", run) for run in _LITERAL_RUN.findall(source)})
    chars = sorted({ch for run in runs for ch in run if ch.isprintable()})
    units = [*_PROBE_UNITS, *chars, *(a + b for a in chars for b in chars if a != b)]
    probes = [(unit, end) for unit in units for end in ("", *runs)][:_MAX_PROBES]
    for unit, end in probes:
        text = unit * (PROBE_CHARS // len(unit)) + end + "\x00!"
        try:
            compiled.search(text, timeout=PROBE_SECONDS)
        except TimeoutError:
            raise ConfigurationError(
                f"ORC_REDACT_PATTERNS: {pattern!r} backtracks catastrophically (over {PROBE_SECONDS * 1000:.0f} ms "
                f"of matching on {len(text)} characters of {unit!r}); make it linear, e.g. with possessive "
                "quantifiers (a++) or atomic groups ((?>...)), and avoid nested repetition such as (a+)+"
            ) from None


def _compiled(pattern: str) -> regex.Pattern[str]:
    try:
        # VERSION0: the syntax of Python's re, which the setting documents.
        return regex.compile(pattern, flags=regex.VERSION0)
    except regex.error as exc:
        raise ConfigurationError(f"ORC_REDACT_PATTERNS: {pattern!r} is not a regular expression") from exc


class Redactor:
    """Replaces secrets in texts on offer by :data:`REDACTED`, counting the replacements, within a time limit."""

    def __init__(self, patterns: Iterable[str] = (), *, seconds: float = REDACTION_SECONDS) -> None:
        """The built-in patterns plus ``patterns`` (regular expressions, each probed: :func:`probe`);
        :class:`~orc.errors.ConfigurationError` names the first one that does not compile or backtracks
        catastrophically. ``seconds``: the CPU time one :meth:`redact_all` may spend."""
        own = list(patterns)
        for pattern in own:
            probe(pattern)
        self._patterns = tuple(_compiled(pattern) for pattern in (*BUILT_IN_PATTERNS, *own))
        self._seconds = seconds

    async def redact_all(self, texts: Sequence[str | None]) -> list[tuple[str | None, int]]:
        """Each text with every secret replaced, and how many were (``None`` stays ``None``), matched in a worker
        thread: the event loop goes on while the patterns run."""
        if not any(texts):
            return [(text, 0) for text in texts]
        return await asyncio.to_thread(self.redact_texts, texts)

    def redact_texts(self, texts: Sequence[str | None]) -> list[tuple[str | None, int]]:
        """:meth:`redact_all` in the calling thread. Past the time limit, each text not yet redacted is withheld
        whole: :data:`REDACTED`, counted once."""
        deadline = time.thread_time() + self._seconds
        out: list[tuple[str | None, int]] = []
        timed_out = False
        for text in texts:
            if text is None:
                out.append((None, 0))
                continue
            if not timed_out:
                try:
                    out.append(self._redact(text, deadline))
                    continue
                except TimeoutError:
                    timed_out = True
                    log.warning("redaction ran out of time (%.1f s); the texts left are withheld", self._seconds)
            out.append((REDACTED, 1) if text else (text, 0))
        return out

    def redact(self, text: str) -> tuple[str, int]:
        """``text`` with every secret replaced, and how many were (in the calling thread, under the time limit)."""
        redacted, count = self.redact_texts([text])[0]
        assert redacted is not None
        return redacted, count

    def _redact(self, text: str, deadline: float) -> tuple[str, int]:
        total = 0
        for pattern in self._patterns:
            remaining = deadline - time.thread_time()
            if remaining <= 0:
                raise TimeoutError
            text, count = pattern.subn(redaction, text, timeout=remaining, concurrent=True)
            total += count
        return text, total


__all__ = ["BUILT_IN_PATTERNS", "REDACTED", "REDACTION_SECONDS", "Redactor", "probe"]
