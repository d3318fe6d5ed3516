"""Grounding enforced in code: a citation marker that names no span retrieved in this turn never reaches the text.

The prompt asks the model to cite only the sources it was given, but a model can still write ``[lease.txt::S99]``
or ``[made-up.pdf::S1]``. Such a marker is removed from the answer — also while it streams: text from an opening
``[`` is held back until the bracket closes (or clearly is not a marker), so a hallucinated marker is never sent
to the client and later taken back. Markers that name several refs (``[a::S1; b::S2]``) keep their real refs.

:func:`grounding_report` then says how much of the answer is cited, for ``metadata.grounding``.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from orc.contracts import Grounding
from orc.text import split_sentences
from orc.text.markers import MARKER, MARKER_PATTERN, marker_refs

_SPACED_MARKER = re.compile(r"\s?" + MARKER_PATTERN)
MAX_MARKER_CHARS = 300
"""A ``[`` not closed within this many characters is text, not a marker: stop holding it back."""


def keep_real_markers(text: str, retrieved: Collection[str]) -> tuple[str, int]:
    """``text`` without the markers (or the refs inside a marker) that name no retrieved span; and how many refs
    were removed."""
    removed = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal removed
        refs = marker_refs(match.group(1))
        real = [ref for ref in refs if ref in retrieved]
        removed += len(refs) - len(real)
        if not real:
            return ""
        lead = " " if match.group(0).startswith(" ") else ""
        return f"{lead}[{'; '.join(real)}]"

    return _SPACED_MARKER.sub(replace, text), removed


@dataclass(slots=True)
class MarkerFilter:
    """Filters a streamed answer piece by piece with :func:`keep_real_markers`, holding back only what could still
    become a marker."""

    retrieved: Collection[str]
    removed: int = 0
    _held: str = ""

    def feed(self, piece: str) -> str:
        """The text that can be sent now."""
        text = self._held + piece
        cut = _open_bracket(text)
        if cut is None:
            # A trailing space may be the one before a marker that is still to come: it goes with the marker.
            cut = len(text) - 1 if text.endswith(" ") else len(text)
        ready, self._held = text[:cut], text[cut:]
        return self._clean(ready)

    def flush(self) -> str:
        """Whatever is still held back, at the end of the stream."""
        text, self._held = self._held, ""
        return self._clean(text)

    def _clean(self, text: str) -> str:
        cleaned, removed = keep_real_markers(text, self.retrieved)
        self.removed += removed
        return cleaned


def _open_bracket(text: str) -> int | None:
    """Where an unclosed ``[`` that may still become a marker starts (with the space before it), or ``None``."""
    start = text.rfind("[")
    if start < 0 or "]" in text[start:] or "\n" in text[start:] or len(text) - start > MAX_MARKER_CHARS:
        return None
    return start - 1 if start > 0 and text[start - 1] == " " else start


def grounding_report(text: str, removed: int) -> Grounding:
    """Count the answer's sentences with and without a citation marker."""
    cited = uncited = 0
    for sentence in split_sentences(text):
        if len(sentence.split()) < 3:
            continue  # headings and list labels are not claims
        if MARKER.search(sentence):
            cited += 1
        else:
            uncited += 1
    return Grounding(cited_sentences=cited, uncited_sentences=uncited, removed_markers=removed)
