"""The citation marker grammar, ``[<document>::<span_id>]``, in one place: a marker names one ref or several
split by ``;`` or ``,`` (``[lease.txt::S1; terms.pdf::S4]``), never spans a line, and never nests a bracket.

Everything that reads markers uses it: citations and grounding in the graph, the offline model's follow-ups, the
exports and the terminal. The page's copy (``orc/web/js/chat.js``) is the same expression.
"""

from __future__ import annotations

import re

MARKER_PATTERN = r"\[([^\[\]\n]*?::[^\[\]\n]*?)\]"
"""A marker; its group 1 is what stands between the brackets (compose it into larger patterns)."""

MARKER = re.compile(MARKER_PATTERN)

_SPLIT_REFS = re.compile(r"\s*[;,]\s*(?=[^;,]*::)")


def marker_refs(inside: str) -> list[str]:
    """The refs a marker names, given what stands between its brackets (``MARKER``'s group 1), in order."""
    return [ref.strip() for ref in _SPLIT_REFS.split(inside.strip()) if ref.strip()]
