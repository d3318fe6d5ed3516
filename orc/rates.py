"""Rate limits as operators write them (``ORC_RATE_LIMIT=20/hour``): the settings check the form with
:meth:`RateLimit.parse`, and admission counts by what it returns."""

from __future__ import annotations

import re
from dataclasses import dataclass

_RATE_PATTERN = re.compile(r"([1-9][0-9]*)\s*/\s*(second|minute|hour|day)")
_WINDOWS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most ``count`` per fixed window of ``window_seconds``."""

    count: int
    window_seconds: int

    @classmethod
    def parse(cls, text: str) -> RateLimit | None:
        """``"20/hour"`` → 20 per 3600 s; ``""`` or ``"off"`` → no limit. :class:`ValueError` otherwise."""
        text = text.strip().lower()
        if text in ("", "off"):
            return None
        match = _RATE_PATTERN.fullmatch(text)
        if match is None:
            raise ValueError("a rate must be N/second, N/minute, N/hour, N/day or off")
        return cls(int(match.group(1)), _WINDOWS[match.group(2)])
