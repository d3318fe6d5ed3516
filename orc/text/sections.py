"""Section titles of passages: the heading a passage sits under, for the title field of the search index.

Extraction may one day hand each span its section title; until a span carries one, the title is read from the
text itself: the last heading line (a markdown ``#`` line, a numbered title such as ``2.7. The icon files``, or a
short capitalised line between blank lines) at or before the passage, in document order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_MARKDOWN = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_NUMBERED = re.compile(r"^\s*(?:\d+(?:\.\d+)*\.?|[A-Z]\.)\s+([A-Z][^.!?;:]{1,70})$")
_MAX_WORDS = 9


def _heading(lines: list[str], index: int) -> str | None:
    line = lines[index].strip()
    if not line:
        return None
    marked = _MARKDOWN.match(line)
    if marked:
        return marked.group(1)
    if len(line.split()) > _MAX_WORDS or line.endswith((".", ",", ";", ":", "!", "?")):
        return None
    numbered = _NUMBERED.match(line)
    if numbered:
        return line
    after_blank = index == 0 or not lines[index - 1].strip()
    before_blank = index + 1 < len(lines) and not lines[index + 1].strip()
    if after_blank and before_blank and line[:1].isupper():
        return line
    return None


def section_titles(passages: Sequence[str]) -> list[str | None]:
    """For each passage, its headings and the heading it continues under (None when it has none)."""
    titles: list[str | None] = []
    current: str | None = None
    for passage in passages:
        lines = passage.splitlines()
        found = [heading for index in range(len(lines)) if (heading := _heading(lines, index))]
        opens = next((_heading(lines, index) for index, line in enumerate(lines) if line.strip()), None)
        parts = ([current] if current and opens is None else []) + found
        titles.append(" · ".join(dict.fromkeys(parts)) or None)
        if found:
            current = found[-1]
    return titles
