"""A streamed answer as the terminal shows it: citation markers become ``[1]`` numbers that match the source list
printed under the answer, and a raw ``[lease.md::S2]`` never reaches the screen.

The text arrives token by token, so a marker can be cut anywhere (``… euros [lease.m`` + ``d::S2].``): what
follows an open ``[`` is held back until the bracket closes (or is plainly not a marker). Numbers go by span, in
order of first mention; a span quoted for two sentences lists both quotes under its number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

# The graph's marker grammar (orc/graph/citations.py): one ref, or several split by ";" or ",".
_MARKER = re.compile(r"\[([^\[\]\n]*?::[^\[\]\n]*?)\]")
_SPLIT_REFS = re.compile(r"\s*[;,]\s*(?=[^;,]*::)")
MAX_HELD_CHARS = 300
"""An open bracket holds text back at most this long: longer, it is no marker (markers are a filename and an id)."""


class AnswerText:
    """Turns streamed answer text into what the terminal prints, and the final citations into the source list."""

    def __init__(self) -> None:
        self._held = ""
        self._numbers: dict[str, int] = {}

    def feed(self, text: str) -> str:
        """The printable part of the text so far (markers numbered); an unfinished marker is held back."""
        text = self._held + text
        self._held = ""
        opening = text.rfind("[")
        tail = text[opening:] if opening >= 0 else ""
        if tail and "]" not in tail and "\n" not in tail and len(tail) <= MAX_HELD_CHARS:
            text, self._held = text[:opening], tail
        return _MARKER.sub(self._number, text)

    def flush(self) -> str:
        """What is still held back at the end of the answer (an open bracket that never closed)."""
        held, self._held = self._held, ""
        return _MARKER.sub(self._number, held)

    def sources(self, citations: Sequence[Mapping[str, Any]]) -> list[str]:
        """``[n] document, page p: “quote”`` lines, one per number; spans cited without a marker come last."""
        quotes: dict[str, list[Mapping[str, Any]]] = {}
        for citation in citations:
            quotes.setdefault(citation["ref"], []).append(citation)
        for ref in quotes:
            self._numbers.setdefault(ref, len(self._numbers) + 1)
        lines = []
        for ref, number in sorted(self._numbers.items(), key=lambda item: item[1]):
            cited = quotes.get(ref)
            if not cited:
                continue
            first = cited[0]
            page = f", page {first['page']}" if first.get("page") else ""
            said = " / ".join(f"“{' '.join(str(c['quote']).split())}”" for c in cited)
            lines.append(f"  [{number}] {_document(first)}{page}: {said}")
        return lines

    def _number(self, match: re.Match[str]) -> str:
        refs = [ref.strip() for ref in _SPLIT_REFS.split(match.group(1).strip()) if ref.strip()]
        for ref in refs:
            self._numbers.setdefault(ref, len(self._numbers) + 1)
        return "".join(f"[{self._numbers[ref]}]" for ref in dict.fromkeys(refs))


def _document(citation: Mapping[str, Any]) -> str:
    return "your supplied text" if citation["document"] == "supplied" else str(citation["document"])
