"""Follow-ups that point into the previous answer by position: "And the second one?", "What about the last?".

The offline model answers them from the previous answer itself: its cited sentences, in order, are the items a
user counts. The item is quoted again with its citation when this turn's sources still hold that span (the answer
prompt keeps the previous answer's cited spans as evidence), so the answer stays grounded.
"""

from __future__ import annotations

import re

from orc.models.rewriting import needs_context
from orc.text.markers import MARKER_PATTERN

__all__ = ["ordinal_index", "pick_item"]

_ORDINALS = {
    "first": 0,
    "1st": 0,
    "second": 1,
    "2nd": 1,
    "third": 2,
    "3rd": 2,
    "fourth": 3,
    "4th": 3,
    "fifth": 4,
    "5th": 4,
    "last": -1,
}
_ORDINAL = re.compile(rf"\b({'|'.join(_ORDINALS)})\b", re.IGNORECASE)
_MAX_WORDS = 8
_CITED = re.compile(r"\s*(.+?" + MARKER_PATTERN + ")", re.DOTALL)


def ordinal_index(message: str) -> int | None:
    """The position a short follow-up points at ("and the second one?" → 1, "the last?" → -1), or None."""
    if len(message.split()) > _MAX_WORDS or (not needs_context(message) and not message.lower().startswith("and")):
        return None
    match = _ORDINAL.search(message)
    return _ORDINALS[match.group(1).lower()] if match else None


def pick_item(previous_answer: str, index: int, refs: set[str]) -> str | None:
    """The ``index``-th cited sentence of ``previous_answer`` (with its marker), if its span is among ``refs``."""
    items = [(match.group(1).strip(), match.group(2).strip()) for match in _CITED.finditer(previous_answer)]
    if not items or not -len(items) <= index < len(items):
        return None
    sentence, ref = items[index]
    return sentence if ref in refs else None
