"""How an answer says the documents do not hold the answer: the offline model's own words, and a test that also
knows how real models phrase it.

The answer node lists places to look under a decline and ``orc eval`` scores one, so both ask the same question
here.
"""

from __future__ import annotations

import re

from orc.text.markers import MARKER

__all__ = ["NOT_FOUND", "is_decline", "is_plain_decline"]

NOT_FOUND = "I couldn't find an answer to that in the documents."
"""The offline model's decline: it always starts with these words."""

# What models say when the documents do not hold the answer. Real models phrase it in many ways, and a test that
# missed one would take a refusal for an answer.
_DECLINES = re.compile(
    r"\b(?:(?:could ?n[o']t|can ?n[o']t|cannot|was unable to|am unable to|unable to|did ?n[o']t|do ?n[o']t)"
    r" (?:find|locate|see|identify|determine)"
    r"|(?:does ?n[o']t|do ?n[o']t|did ?n[o']t) (?:mention|say|state|specify|contain|cover|include|describe|address)"
    r"|(?:is|are) not (?:mentioned|stated|specified|covered|described|addressed|included)"
    r"|no (?:information|mention|answer|details?) (?:about|on|of|regarding|in|to)"
    r"|not (?:found|available) in the (?:documents?|sources?|files?|provided))",
    re.IGNORECASE,
)
DECLINE_WINDOW = 400
"""A decline says so at once: only the answer's opening is read (a long answer may quote "does not cover")."""


def is_decline(answer: str) -> bool:
    """Whether ``answer`` says the documents do not hold the answer."""
    text = answer.strip()
    return text.startswith(NOT_FOUND) or bool(_DECLINES.search(text[:DECLINE_WINDOW]))


def is_plain_decline(answer: str) -> bool:
    """Whether ``answer`` declines and cites nothing (a real model may decline one part and answer another)."""
    return is_decline(answer) and not MARKER.search(answer)
