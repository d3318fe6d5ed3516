"""Section titles: the headings of a page's text, found the same way for every format that has them.

Markdown, DOCX (Title/Heading styles), HTML (``h1``–``h6``) and slides (their titles) reach here with their
headings as Markdown heading lines (:mod:`orc.documents.parsing.extraction` writes them so); a spreadsheet's sheets are
``Sheet: name`` lines; a PDF has only its text lines, so a heading there is a short line that looks like one:
numbered (``2.5 The magic files``) or a few capitalised words on a line of their own, between sentences. Plain
text and source code have no headings (a ``#`` there is a comment).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orc.contracts import SECTION_SEPARATOR
from orc.extracted import DOCX, HTML, MARKDOWN, PDF, PPTX, XLSX

__all__ = ["SECTION_SEPARATOR", "Heading", "find_headings", "section_path"]

MAX_PATH_TITLES = 3
MAX_TITLE_CHARS = 120
PDF_TITLE_WORDS = 10
"""Longest numbered PDF heading, in words."""
PDF_PLAIN_TITLE_WORDS = 6
"""Longest unnumbered PDF heading: without a number, only a short line of capitalised words is taken for one."""


@dataclass(frozen=True, slots=True)
class Heading:
    """A heading line of a page: ``text[start:end]`` is the whole line (its ``#`` marks included)."""

    start: int
    end: int
    level: int
    title: str


_MARKDOWN = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_SETEXT = re.compile(r"^([^\n]*\S[^\n]*)\n(=+|-{3,})[ \t]*$", re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)
_SHEET = re.compile(r"^Sheet: (.+)$", re.MULTILINE)
_LINE = re.compile(r"[^\n]+")
_NUMBERED = re.compile(r"(?P<number>(?:[0-9]{1,2}|[A-Z])(?:\.[0-9]{1,2}){0,3})\.?[ \t]+(?P<title>\S.*)")
_CODE_TOKEN = re.compile(r"_|[^\W\d_][0-9]|[0-9][^\W\d_]|^[0-9]+$")
_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_MINOR_WORDS = frozenset("a an and as at by for from in into of on or the to with without under per via vs".split())
_NOT_IN_TITLES = frozenset("(){}[]=;<>|∗*/\\@$%^~`+")


def find_headings(text: str, media_type: str) -> list[Heading]:
    """The headings of one page of ``text`` extracted as ``media_type``, in order."""
    if media_type in (MARKDOWN, DOCX, HTML, PPTX):
        return _markdown_headings(text)
    if media_type == XLSX:
        return [Heading(m.start(), m.end(), 1, _title(m.group(1))) for m in _SHEET.finditer(text)]
    if media_type == PDF:
        return _pdf_headings(text)
    return []


def section_path(titles: list[tuple[int, str]]) -> str | None:
    """The section path of a heading stack ``[(level, title), …]``: its last titles, outermost first."""
    kept = [title for _, title in titles[-MAX_PATH_TITLES:] if title]
    return SECTION_SEPARATOR.join(kept) if kept else None


def _title(text: str) -> str:
    title = " ".join(text.replace("*", " ").replace("`", "").split()).strip(" #")
    return title[:MAX_TITLE_CHARS]


def _markdown_headings(text: str) -> list[Heading]:
    fenced = _fenced_ranges(text)
    found = [
        Heading(m.start(), m.end(), len(m.group(1)), _title(m.group(2)))
        for m in _MARKDOWN.finditer(text)
        if not _inside(m.start(), fenced)
    ]
    for m in _SETEXT.finditer(text):
        line = m.group(1)
        before = text[: m.start()]
        # Underlined titles (setext): the line above must stand alone, or a dashed rule under prose is one.
        if _inside(m.start(), fenced) or line.lstrip().startswith(("#", "-", "*", "|", ">")):
            continue
        if before and not before.endswith("\n\n") and before.strip():
            continue
        found.append(Heading(m.start(), m.end(), 1 if m.group(2)[0] == "=" else 2, _title(line)))
    return sorted((heading for heading in found if heading.title), key=lambda heading: heading.start)


def _fenced_ranges(text: str) -> list[tuple[int, int]]:
    marks = [m.start() for m in _FENCE.finditer(text)]
    ranges = [(marks[i], marks[i + 1]) for i in range(0, len(marks) - 1, 2)]
    if len(marks) % 2:
        ranges.append((marks[-1], len(text)))
    return ranges


def _inside(offset: int, ranges: list[tuple[int, int]]) -> bool:
    return any(start <= offset < end for start, end in ranges)


def _pdf_headings(text: str) -> list[Heading]:
    lines = [(m.start(), m.end(), m.group().strip()) for m in _LINE.finditer(text)]
    found = []
    for index, (start, end, line) in enumerate(lines):
        previous = lines[index - 1][2] if index else ""
        following = lines[index + 1][2] if index + 1 < len(lines) else ""
        level = _pdf_heading_level(line, previous, following)
        if level is not None:
            found.append(Heading(start, end, level, _title(line)))
    return found


def _pdf_heading_level(line: str, previous: str, following: str) -> int | None:
    """The level of a PDF text line that reads as a heading, or None.

    Numbered: ``3``, ``3.2``, ``A.1`` then a capitalised title of a few words without sentence punctuation or code
    characters (a numbered code listing line is not a title). Unnumbered: at most a few words, every significant
    one capitalised, after a line that ends a sentence (or none) and before text — a line of a wrapped paragraph
    or of a table does not qualify.
    """
    if not following or len(line) > MAX_TITLE_CHARS or line.endswith((".", ",", ";", ":")):
        return None
    if any(char in _NOT_IN_TITLES for char in line):
        return None
    numbered = _NUMBERED.fullmatch(line)
    if numbered is not None:
        title = numbered.group("title")
        words = _WORD.findall(title)
        if not words or len(title.split()) > PDF_TITLE_WORDS or not title[0].isupper():
            return None
        if numbered.group("number").isalpha() or any(_CODE_TOKEN.search(token) for token in title.split()):
            return None  # "K. For any section…" is a list item; "4 CARD32 N_ROOTS" a row of a format table
        if sum(1 for word in words if word[0].isupper() or word.lower() in _MINOR_WORDS) < len(words) / 2:
            return None
        number = numbered.group("number")
        if number.isdigit() and int(number) > 30:
            return None  # a page number, a year or a listing's line number
        return number.count(".") + 1
    words = line.split()
    if not 1 <= len(words) <= PDF_PLAIN_TITLE_WORDS or not all(_WORD.fullmatch(word) for word in words):
        return None
    significant = [word for word in words if word.lower() not in _MINOR_WORDS]
    if not significant or not all(word[0].isupper() for word in significant):
        return None
    if not previous:
        return None  # the first line of a page is as often its running header as a title
    if not previous.endswith((".", "!", "?", ":")):
        return None
    if not following[:1].isupper() or len(following) <= len(line):
        return None
    return 1
