"""How deeply a JSON text nests, found without parsing it: parsers recurse per level, so a body of ``[[[[…`` a
few hundred kilobytes long raised ``RecursionError`` inside them (a 500, or a worker that never came back)."""

from __future__ import annotations

import re

MAX_JSON_DEPTH = 200
"""Deeper than any request, tool result or document orc reads; shallow enough for every recursive parser."""

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of arrays and objects in ``text`` (brackets inside strings do not count)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub('""', text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def too_deep(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``text`` nests deeper than ``limit``."""
    return json_depth(text) > limit
