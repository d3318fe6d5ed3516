"""Sentences: prose split into sentences, list items and title lines (for citations and the offline model)."""

from __future__ import annotations

import re

# A sentence may open with a quote, a bracket or Markdown emphasis ("**The last number…").
_SENTENCE_END = re.compile(
    r"(?<=[.!?])\s+(?=[\"'“‘(\[]?(?:\*{1,2}|_{1,2})?[A-Z0-9])|\n{2,}|\n(?=\s*(?:[-*•]|\d+[.)])\s)"
)
_HEADING_MARK = re.compile(r"^\s{0,3}#{1,6}\s")
_TERMINAL = (".", "!", "?", ":", ";", ",")
_MAX_TITLE_CHARS = 60
# A numbered section title run into its first sentence, as PDF text has it: "2.5. The magic files The magic
# data is stored…" — the title ends where a capitalised word follows a lower-case one.
_GLUED_TITLE = re.compile(r"^([A-Z][^.!?:;\"“]{0,60}?[a-z])\s+(?=[A-Z][a-z])")
_SECTION_NUMBER = re.compile(r"^\d+(?:\.\d+)+\.?$")
# A sentence ending inside a line, after a word ("…as www-data. Web…"), not after a section number ("2.1. Removal").
# A line ending with one of these goes on below: "…search for it in the / [issue tracker]".
_CONTINUING = frozenset("a an the of in on at to for with from by and or but as into than that which is are be".split())
_PROSE_STOP = re.compile(r"[a-z]{2}[.!?]\s+[A-Z]")
# A line that is only an underline or a rule: a setext heading's "-------------", a "=====" or "+-----+" border.
_RULE_LINE = re.compile(r"\s*[=\-~^*_#+]{3,}\s*")


def _is_heading(lines: list[str], index: int) -> bool:
    """A markdown heading, or a short title line: after a blank line, before text, without closing punctuation.

    Wrapped prose (PDF lines) is not mistaken for titles: its lines rarely follow a blank line and are long.
    """
    line = lines[index].strip()
    if _HEADING_MARK.match(lines[index]):
        return True
    after_blank = index == 0 or not lines[index - 1].strip()
    following = lines[index + 1].strip() if index + 1 < len(lines) else ""
    return (
        after_blank
        and bool(following)
        and 0 < len(line) <= _MAX_TITLE_CHARS
        and not line.endswith(_TERMINAL)
        and line[:1].isupper()
        # The first line of a wrapped paragraph: its sentence goes on below ("Web content should / not be owned…")
        # or has already ended within it ("Some servers run as www-data. Web content should").
        and not following.lstrip("[(\"'*_`")[:1].islower()
        and not _PROSE_STOP.search(line)
        and line.rsplit(None, 1)[-1].lower() not in _CONTINUING
    )


def _untitled(sentence: str) -> list[str]:
    """``sentence`` (which follows a section number), or the title run into it and the sentence itself."""
    glued = _GLUED_TITLE.match(sentence)
    if glued is None:
        return [sentence]
    return [glued.group(1), sentence[glued.end() :]]


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences and list items; a heading or title line is a piece of its own (without ``#``).

    Keeping titles apart stops them being glued to the first sentence below them, without losing any text.
    """
    lines = text.splitlines()
    sentences: list[str] = []
    current: list[str] = []

    def flush() -> None:
        block = "\n".join(current)
        after_number = False
        for piece in _SENTENCE_END.split(block):
            if piece and piece.strip():
                piece = " ".join(piece.split())
                sentences.extend(_untitled(piece) if after_number else [piece])
                after_number = bool(_SECTION_NUMBER.match(piece))
        current.clear()

    for index, line in enumerate(lines):
        if _RULE_LINE.fullmatch(line):
            # Markup, never part of a sentence: under "Where to send" with no blank line after it, the dashes
            # opened the section's first sentence ("------------- You can raise issues…"), and answers quoted them.
            # It stays a piece of its own, so a reader can tell the line above it is a heading.
            flush()
            sentences.append(line.strip())
            continue
        heading = bool(line.strip()) and _is_heading(lines, index)
        if heading or not line.strip():
            flush()
            if heading:
                sentences.append(" ".join(_HEADING_MARK.sub("", line, count=1).split()))
            continue
        current.append(line)
    flush()
    return sentences
