"""A streamed answer as the terminal shows it: citation markers become ``[1]`` numbers that match the source list
printed under the answer, and a raw ``[lease.md::S2]`` never reaches the screen.

The text arrives token by token, so a marker can be cut anywhere (``… euros [lease.m`` + ``d::S2].``): what
follows an open ``[`` is held back until the bracket closes (or is plainly not a marker). Each ref of each marker
gets the next number; once the answer's citations are known, each number is matched to the quote its sentence
cites, by the rule the page and the exports use (orc/conversations/export.py): the citation of that span whose
quote the sentence holds, else the first of that span not matched yet.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from orc.output_policy import as_text
from orc.text.markers import MARKER, MARKER_PATTERN, marker_refs

MAX_HELD_CHARS = 300
"""An open bracket holds text back at most this long: longer, it is no marker (markers are a filename and an id)."""


class AnswerText:
    """Turns streamed answer text into what the terminal prints, and the final citations into the source list."""

    def __init__(self) -> None:
        self._held = ""
        self._shown = ""  # the text printed so far, markers as they came: the claims the numbers belong to
        self._marks: list[tuple[str, str]] = []  # (ref, the sentence before it), one per number, in order
        self._claim_start = 0  # where in _shown the sentence of the next marker begins

    def feed(self, text: str) -> str:
        """The printable part of the text so far (markers numbered); an unfinished marker is held back, and so is
        an escape cut between two pieces (``&l`` + ``t;``)."""
        text = self._held + text
        self._held = ""
        opening = text.rfind("[")
        tail = text[opening:] if opening >= 0 else ""
        if tail and "]" not in tail and "\n" not in tail and len(tail) <= MAX_HELD_CHARS:
            text, self._held = text[:opening], tail
        elif cut := _CUT_ESCAPE.search(text):
            text, self._held = text[: cut.start()], text[cut.start() :]
        return as_text(self._numbered(text))

    def flush(self) -> str:
        """What is still held back at the end of the answer (an open bracket that never closed)."""
        held, self._held = self._held, ""
        return as_text(self._numbered(held))

    def sources(self, citations: Sequence[Mapping[str, Any]]) -> list[str]:
        """``[n] document, page p: “quote”`` lines, one per number; quotes no marker named come last, numbered on."""
        taken: set[int] = set()
        lines = []
        for number, (ref, claim) in enumerate(self._marks, start=1):
            candidates = [index for index, citation in enumerate(citations) if citation["ref"] == ref]
            found = next((i for i in candidates if _squash(str(citations[i]["quote"])) in claim), None)
            if found is None:
                found = next((i for i in candidates if i not in taken), candidates[0] if candidates else None)
            if found is not None:
                taken.add(found)
                lines.append(_line(number, citations[found]))
        extra = [citation for index, citation in enumerate(citations) if index not in taken]
        lines += [_line(number, citation) for number, citation in enumerate(extra, start=len(self._marks) + 1)]
        return lines

    def _numbered(self, text: str) -> str:
        shown: list[str] = []
        last = 0
        for match in MARKER.finditer(text):
            shown.append(text[last : match.start()])
            self._shown += text[last : match.start()]
            last = match.end()
            claim = _squash(self._shown[self._claim_start :])
            self._claim_start = len(self._shown)
            for ref in marker_refs(match.group(1)):
                self._marks.append((ref, claim))
                shown.append(f"[{len(self._marks)}]")
        shown.append(text[last:])
        self._shown += text[last:]
        return "".join(shown)


def _squash(text: str) -> str:
    return " ".join(text.split())


_CUT_ESCAPE = re.compile(r"&(?:[lg]t?)?$")


def _line(number: int, citation: Mapping[str, Any]) -> str:
    page = f", page {citation['page']}" if citation.get("page") else ""
    return as_text(f"  [{number}] {_document(citation)}{page}: “{_squash(str(citation['quote']))}”")


_BARE_REF = re.compile(r"([^\s:]+)::[^\s:,;]+")


def readable(text: str) -> str:
    """Text for a reader: ``[lease.pdf::S2]`` markers dropped, a bare ``lease.pdf::S2`` shown as ``lease.pdf``."""
    return _BARE_REF.sub(r"\1", re.sub(r"\s*" + MARKER_PATTERN, "", text))


def _document(citation: Mapping[str, Any]) -> str:
    return "your supplied text" if citation["document"] == "supplied" else str(citation["document"])


def place_line(place: Mapping[str, Any]) -> str:
    """``  - lease.pdf, page 3, section Termination: “excerpt”``: one place to look under a declined answer."""
    page = f", page {place['page']}" if place.get("page") else ""
    section = f", section {_squash(str(place['section']))}" if place.get("section") else ""
    return as_text(f"  - {_document(place)}{page}{section}: “{_squash(str(place['excerpt']))}”")
