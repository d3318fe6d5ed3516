"""Passages: the sources of an answer prompt, parsed back, and the sentences of each that could answer.

The sources come from the ``<sources>`` block that :func:`orc.models.prompting.format_sources` renders into the
answer and document_chat prompts. A *passage* is one whole sentence of a source (or a list item), with what scopes
it: the heading above it, the FAQ question it answers (labelled "Q.", numbered "42.", or ending the span before),
the first sentence of the list item it goes on, the sentences beside it and the document's file name. Headings,
titles, tables of contents, FAQ labels and questions are never passages, and neither is a piece of a sentence a
span boundary cut.
"""

from __future__ import annotations

import html
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from orc.contracts import SECTION_SEPARATOR
from orc.models.questions import terms, terms_of
from orc.text import split_sentences, tokenize

__all__ = ["Passage", "Source", "find_sources", "open_question", "parse_sources", "passages"]

HEADING_WORDS = 3
"""A sentence this short (``"Rent."``, ``"Security deposit."``) is a heading: it is joined to the next one."""
TABLE_BARS = 3
"""A piece with this many ``|`` is a row of a table (Markdown, or drawn in text), not a sentence."""
TITLE_WORDS = 8
"""Longest section title told apart from a sentence by its capitalised words."""

_TERMINAL = (".", "!", "?", ":", ";")
_CLOSING = (".", "!", "?", ":", ";", ")", '"', "'", "”", "’")
_MARKER = re.compile(r"^\s*(?:\(?[0-9]{1,3}(?:\.[0-9]{1,3})*[.)]?|\(?[a-zA-Z][.)]|\([ivx]{1,4}\))\s*")
# A list marker is a number, a letter or a roman numeral: "Yes." and "No." open replies ("Yes.  inflate() will…").
_LEADING_MARKERS = re.compile(r"^(?:\(?(?:[0-9]{1,3}|[a-zA-Z]|[ivxIVX]{1,4})(?:\.[0-9]{1,3})*[.)]\s+)*[\"'“‘«„(\[]?")
_BULLET = re.compile(r"^\s*[-*•+]\s+\S")
# A list item's marker: a bullet (man pages print "○" and "◦"), a number or a letter ("1.", "b)", "(iv)").
_ITEM = re.compile(r"^\s*(?:[-*•+○◦▪‣]|\(?[0-9]{1,3}(?:\.[0-9]{1,3})*[.)]|\(?[a-zA-Z][.)]|\([ivx]{1,4}\))\s+\S")
_BLOCKS = re.compile(r"\n[ \t]*\n")
# "No.", "Yes." open an FAQ's answer: the reply itself, no title.
_REPLY = re.compile(r"(?:yes|no)", re.IGNORECASE)
_NUMBERED = re.compile(r"^\s*[0-9]{1,3}(?:\.[0-9]{1,3})*[.)]\s+\S")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]\s|\(?[a-z0-9]{1,3}[.)]\s)")
# The next list item's marker left at a sentence's end ("…by this document. b."), not a number ("…is 100.").
_TRAILING_MARKER = re.compile(r"(?<=[.;:])\s+\(?[a-z][.)]$")
_SENTENCE_STOP = re.compile(r"[.!?][\"')\]”’]*(?=\s|$)")
_MINOR_WORDS = frozenset("a an and as at by for from in into of on or the to with without under per via vs".split())
# An FAQ's labels ("Q:", "A.", "Answer:") say who speaks, not what, and a bullet ("*", "-", "•") only that a list
# goes on: the text after them is the sentence.
_LABEL = re.compile(r"^(?:(?:Q|A|Question|Answer)\s*[:.)]|[-*•+])\s+", re.IGNORECASE)
# An FAQ's question may run over several sentences, only the first labelled ("Q. There is a new point release and
# I've just upgraded my system. The file now says 10.x… Is this ok?"): every one of them asks, none answers.
_ASKED = re.compile(r"^(?:Q|Question)\s*[:.)]\s", re.IGNORECASE)
_ANSWERED = re.compile(r"^(?:A|Answer)\s*[:.)]\s", re.IGNORECASE)
QUESTION_SENTENCES = 4
"""Longest FAQ question, in sentences: past it, an unlabelled answer is read again."""

# A short piece with a verb, a negation, a number or a value after a colon says something ("Pets are allowed.",
# "Not covered.", "Key deposit: $20."): it is no label.
_CLAUSE = re.compile(
    r"\b(?:is|are|was|were|be|been|has|have|had|do|does|did|can|may|must|will|shall|should|not|no|never|yes|"
    r"it|they|we|you|i|this|that)\b|\w(?:ed|es)\b|\d|:\s\S",
    re.IGNORECASE,
)
_SOURCES_BLOCK = re.compile(r"<sources>(.*?)</sources>", re.DOTALL)
_SUPPLIED_BLOCK = re.compile(r"<supplied_context>(.*?)</supplied_context>", re.DOTALL)
_SOURCE = re.compile(r"<source\b([^>]*)>(.*?)</source\s*>", re.DOTALL)
_ATTRIBUTE = re.compile(r"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")


class _FaqReading(NamedTuple):
    """One piece of a span as an FAQ reads (:func:`_faq_questions`)."""

    asking: bool
    asked: tuple[str, ...]
    still_open: bool


@dataclass(frozen=True, slots=True)
class Source:
    """One ``<source>`` element: its SourceRef, page, text and the title path of its section."""

    ref: str
    page: int | None
    text: str
    section: str | None = None


@dataclass(frozen=True, slots=True)
class Passage:
    """One sentence of a source that could answer, with what scopes it."""

    source: Source
    text: str
    terms: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    """Adjacent word pairs, to prefer "default weight" side by side over the two words apart."""
    heading: str
    """The section heading above it (``""`` when none): it scopes the sentence."""
    context: frozenset[str]
    """Terms of :attr:`heading`."""
    name: frozenset[str]
    """Terms of the document's file name."""
    nearby: frozenset[str]
    """Terms of the sentences just before and after it in the same source."""
    before: str
    """The sentence just before it in the same source (``""`` for the first): it often names what this one is
    about ("`$TIMEOUT` — the time to wait. If no unit is given, seconds.")."""
    position: int
    """Its place among the source's passages (0 for the first)."""
    asked: str = ""
    """The FAQ question it answers (``""`` when none): it scopes the answer as a heading does."""
    opens_answer: bool = False
    """It is the first sentence of an FAQ's answer: the reply itself ("No.", "That would be nice, but…")."""
    lead: str = ""
    """The first sentence of the list item it goes on ("* `$SYSTEMD_…_BURST` — can be set to override the burst
    limit…" for "Defaults to `5`, accepts positive integers."): the item's subject is this sentence's too."""


def find_sources(system_text: str) -> list[Source] | None:
    """The sources of the last ``<sources>`` block in ``system_text``, after what the user supplied for the
    question (a ``<supplied_context>`` block, which comes first); None when there is no sources block."""
    blocks = _SOURCES_BLOCK.findall(system_text)
    if not blocks:
        return None
    supplied = _SUPPLIED_BLOCK.findall(system_text)
    return (parse_sources(supplied[-1]) if supplied else []) + parse_sources(blocks[-1])


def parse_sources(block: str) -> list[Source]:
    """Parse ``<source ref="..." page="...">text</source>`` elements (attributes quoted, text escaped)."""
    sources = []
    for attributes, body in _SOURCE.findall(block):
        values = {
            name: html.unescape(single if single and not double else double)
            for name, double, single in _ATTRIBUTE.findall(attributes)
        }
        ref = values.get("ref", "").strip()
        if not ref:
            continue
        page = values.get("page", "").strip()
        text = html.unescape(body).strip()
        section = values.get("section", "").strip() or None
        sources.append(Source(ref=ref, page=int(page) if page.isdigit() else None, text=text, section=section))
    return sources


@lru_cache(maxsize=4096)
def passages(source: Source, question_before: str = "") -> tuple[Passage, ...]:
    """The answerable sentences of one source, each with its heading, neighbours and file name as context (cached:
    a follow-up and the places to look read the same sources again). ``question_before`` is the FAQ question the
    span before ended with (:func:`open_question`): the sentences that open this one answer it."""
    name = _name_terms(source.ref.rsplit("::", 1)[0])
    pieces = _sentences(source.text, source.section)
    piece_tokens = [tokenize(text) for text, _, _ in pieces]
    piece_terms = [terms_of(tokens) for tokens in piece_tokens]
    result: list[Passage] = []
    opening = bool(question_before)
    for index, ((text, heading, lead), (asking, asked, _)) in enumerate(
        zip(pieces, _faq_questions(pieces, question_before), strict=True)
    ):
        if asking:
            # An FAQ's question scopes its answer; it never answers.
            opening = True
            continue
        unlabelled = _LABEL.sub("", text)
        # A bulleted item that does not start as a sentence ("• alias elements indicate…") keeps its bullet: it is
        # read, and quoted, as the list item it is.
        listed = bool(_BULLET.match(text)) and not _starts_a_sentence(unlabelled)
        whole = _whole(
            text.strip() if listed else unlabelled,
            first=index == 0,
            last=index == len(pieces) - 1,
            listed=listed,
            named=name,
            item=bool(_BULLET.match(text)),
        )
        if whole is None or _is_title(whole) or whole.endswith("?") or whole.count("|") >= TABLE_BARS:
            # A question (an FAQ's, a rhetorical one) asks; it never answers. A table's row is no sentence.
            continue
        tokens = piece_tokens[index] if whole == text else tokenize(whole)
        nearby = frozenset().union(*piece_terms[max(index - 1, 0) : index], *piece_terms[index + 1 : index + 2])
        result.append(
            Passage(
                source=source,
                text=whole,
                terms=piece_terms[index] if whole == text else terms_of(tokens),
                pairs=frozenset(itertools.pairwise(tokens)),
                heading=heading,
                context=terms(" ".join([heading, *asked, lead])) if heading or asked or lead else frozenset(),
                name=name,
                nearby=nearby,
                before=pieces[index - 1][0] if index > 0 else "",
                position=len(result),
                asked=" ".join(asked),
                lead=lead,
                opens_answer=opening and bool(asked),
            )
        )
        opening = False
    return tuple(result)


@lru_cache(maxsize=1024)
def open_question(source: Source) -> str:
    """The FAQ question ``source`` ends with, unanswered in it (``""`` when it ends otherwise): its answer opens the
    next span ("Q. Why does /etc/issue say trixie/sid?" at the end of one span, "A. That would be nice, but…"
    starting the next)."""
    pieces = _sentences(source.text, source.section)
    last = ""
    for asking, asked, still_open in _faq_questions(pieces):
        last = " ".join(asked) if asking and still_open else ""
    return last


def _faq_questions(pieces: list[tuple[str, str, str]], question_before: str = "") -> Iterator[_FaqReading]:
    """How an FAQ reads piece by piece: whether each piece is part of a question (labelled "Q.", or a numbered
    entry that asks), the question that scopes it so far, and whether that question is still open (ended with its
    question mark, or not ended yet) rather than run out after :data:`QUESTION_SENTENCES` without one.

    A question lasts until its question mark or its answer's label; the answer after it is scoped by it, until the
    next question or, in a numbered FAQ, the next numbered entry. ``question_before`` scopes the opening pieces.
    """
    asking = 0
    asked: tuple[str, ...] = (question_before,) if question_before else ()
    numbered = False
    for index, (text, _, _) in enumerate(pieces):
        if _ASKED.match(text) or _numbered_question(pieces, index):
            asking, asked, numbered = QUESTION_SENTENCES, (), not _ASKED.match(text)
        elif _ANSWERED.match(text):
            asking = 0
        elif numbered and not asking and _NUMBERED.match(text):
            # The next numbered entry of a numbered FAQ is no longer about the question before.
            asked, numbered = (), False
        if not asking:
            yield _FaqReading(False, asked, False)
            continue
        asked = (*asked, _MARKER.sub("", _LABEL.sub("", text)))
        ends = text.rstrip().endswith("?")
        asking = 0 if ends else asking - 1
        yield _FaqReading(True, asked, ends or asking > 0)


def _numbered_question(pieces: list[tuple[str, str, str]], index: int) -> bool:
    """Whether piece ``index`` opens a numbered FAQ entry that asks ("42. The match.asm code … is under the GNU
    GPL. Since it's part of zlib, doesn't that mean …?"): a numbered item whose first sentences end with a
    question mark."""
    text = pieces[index][0]
    if not _NUMBERED.match(text):
        return False
    item = [text, *(piece for piece, _, lead in pieces[index + 1 : index + QUESTION_SENTENCES] if lead == text)]
    return any(piece.rstrip().endswith("?") for piece in item)


@lru_cache(maxsize=1024)
def _name_terms(filename: str) -> frozenset[str]:
    """The words of a file name, without its extension: ``apache-2.0.txt`` → apach, 2, 0."""
    stem = filename.rsplit(".", 1)[0] if "." in filename else filename
    return terms(re.sub(r"[-_.]+", " ", stem))


def _sentences(text: str, section: str | None = None) -> list[tuple[str, str, str]]:
    """Sentences of a span, each with the heading above it (``""`` when none) and the first sentence of the list
    item it goes on (``""`` when it opens one, or is in none).

    Headings and titles ("3. Security deposit", "Grant of Patent License.") are not answers: they become the
    context of the sentences under them; so is every title of the span's ``section`` path (the headings extraction
    found, however long), and the innermost one is the heading of the sentences before any in the span itself.
    A short label ending with a full stop ("Rent.", "Security deposit.") is a heading too; a short sentence that
    says something ("Pets are allowed.") stays one. A bare number or list marker ("9.", "b)") is joined to what
    follows. A list item's later sentences ("Defaults to `5`, accepts positive integers.") are about what its first
    one names: that sentence is their *lead*, up to the next item, heading or blank line.
    """
    merged: list[tuple[str, str, str]] = []
    lead = ""
    pending = ""
    titles = {_heading_key(title) for title in section.split(SECTION_SEPARATOR)} if section else set()
    heading = section.rsplit(SECTION_SEPARATOR, 1)[-1] if section else ""
    previous = ""
    for sentence, opens_block in _block_sentences(text):
        previous, line = sentence, previous
        if opens_block:
            lead = ""
        if _RULE.fullmatch(sentence):
            # "Common cases\n------------": the underline makes the line above it a heading, even one that reads
            # as a sentence; a rule alone says nothing.
            if merged and line and merged[-1][0].endswith(line):
                heading = merged.pop()[0]
            continue
        underlined = _UNDERLINED.match(sentence)
        if underlined and not underlined["title"].endswith(_TERMINAL):
            heading, pending = underlined["title"], ""
            continue
        if underlined:
            sentence = underlined["title"]
        words = len(sentence.split())
        if (
            _is_title(sentence)
            or (words <= HEADING_WORDS and not sentence.endswith(_TERMINAL))
            or _heading_key(sentence) in titles
        ):
            heading = _MARKER.sub("", sentence).strip(" *")
            pending, lead = "", ""
            continue
        if _MARKER.fullmatch(sentence):
            pending = f"{pending} {sentence}".strip()
            continue
        if words <= HEADING_WORDS and sentence.endswith((".", ":")) and not _CLAUSE.search(sentence):
            # "Rent.", "Security deposit:", "A: ": a label over what follows, not a sentence of its own.
            heading = _MARKER.sub("", sentence).strip(" *.:")
            continue
        if words <= HEADING_WORDS and sentence.endswith((".", ":")):
            pending = f"{pending} {sentence}".strip()
            continue
        whole = f"{pending} {sentence}".strip()
        if (_ITEM.match(whole) or _TRAILING_MARKER.search(line)) and not _ANSWERED.match(whole):
            # An item opens with its marker, or after it when splitting left the marker on the line before ("…by
            # this document. b."); an FAQ's "A." labels an answer, not an item.
            merged.append((whole, heading, ""))
            lead = whole
        else:
            merged.append((whole, heading, lead))
        pending = ""
    if pending and not _MARKER.fullmatch(pending):
        merged.append((pending, heading, lead))
    return merged


def _block_sentences(text: str) -> list[tuple[str, bool]]:
    """The sentences of ``text`` (:func:`orc.text.split_sentences`), each marked when it opens a block of lines."""
    return [
        (sentence, index == 0) for block in _BLOCKS.split(text) for index, sentence in enumerate(split_sentences(block))
    ]


def _heading_key(text: str) -> str:
    """A title as compared with a heading line: without ``#`` marks, emphasis and spacing differences."""
    return " ".join(text.replace("*", " ").split()).strip(" #").casefold()


# A line of =, -, ~ or ^ under a title (setext and reStructuredText headings), or a rule across the page.
_RULE = re.compile(r"[=\-~^*_#+]{3,}")
# The same underline that sentence splitting left on its title's line: "dpkg side ---------".
_UNDERLINED = re.compile(r"^(?P<title>.+?)\s+[=\-~^]{3,}$")
_LEADERS = re.compile(r"(?:\.\s?){5,}")
_LABELLED_TITLE = re.compile(r"^(?:APPENDIX|CHAPTER|SECTION|PART|ANNEX|EXHIBIT|SCHEDULE)\b[^.!?]{0,80}[.:]?$")
"""A table of contents' dot leaders ("Supported types . . . . . . 12"): an index line, not an answer."""


def _is_title(sentence: str) -> bool:
    """A section title rather than a sentence: a few words, most of them capitalised, no clause of its own
    ("2. Grant of Copyright License.", "* 6. Disclaimer of Warranty *", "TERMS AND CONDITIONS"), a labelled title
    ("APPENDIX: How to apply the Apache License to your work."), or a line of a table of contents."""
    if _LEADERS.search(sentence) or _LABELLED_TITLE.match(sentence):
        return True
    text = _MARKER.sub("", sentence.strip(" *")).strip(" *.:")
    words = re.findall(r"[^\W\d_][\w'’-]*", text)
    if not words or len(words) > TITLE_WORDS or text.endswith((",", ";")) or _REPLY.fullmatch(text):
        return False
    significant = [word for word in words if word.lower() not in _MINOR_WORDS]
    return bool(significant) and all(word[0].isupper() for word in significant)


def _starts_a_sentence(text: str) -> bool:
    """Whether ``text``, after a list marker and an opening quote, starts as a sentence does: not in lower case
    (any script: "État", "Дата" and "数据" start sentences), not as markup ("<program>", "{")."""
    rest = text[_LEADING_MARKERS.match(text).end() :]  # type: ignore[union-attr]  # the pattern always matches
    return bool(rest) and not rest[0].islower() and rest[0] not in "<{"


def _whole(
    text: str,
    *,
    first: bool,
    last: bool,
    listed: bool = False,
    named: frozenset[str] = frozenset(),
    item: bool = False,
) -> str | None:
    """``text`` as a whole sentence, or None when it is a piece a span boundary cut off.

    A source's first piece may start in the middle of a sentence (the span before it holds the beginning), its
    last may stop short (the next span or page holds the rest): such a piece is left out, or cut back to the
    last sentence it does complete. A bulleted item (``listed``, its bullet kept) may go on in lower case or with
    a name in angle brackets ("• alias elements indicate…", "• <MIME>/aliases (contains…)"). A sentence may open
    with the lower-case name its document is named after (``named``: "pip 20.3 was the last version…" in
    ``pip-release-process.rst``). ``item`` says ``text`` is a bulleted item whose bullet was taken off: it may go
    without a full stop ("`PIP_VERBOSE=3` is the same as `pip install -vvv`").
    """
    text = _TRAILING_MARKER.sub("", text).strip()
    if listed:
        if not text or (not text.endswith(_CLOSING) and (last or len(text.split()) <= HEADING_WORDS)):
            return None
        return text
    if first and text[:1].islower() and not _MARKER.match(text):
        return None
    if not _starts_a_sentence(text) and not (text.endswith(_CLOSING) and text.split(None, 1)[0] in named):
        # A clause of a list ("(a) such Covered Software must…; and") or a template line ("<program> Copyright…")
        # does not stand as a sentence.
        return None
    if not text.endswith(_CLOSING):
        # A list item may go without a full stop ("- Rent: 1,450 euros"); other unclosed text is a title line
        # ("Version 2.0, January 2004") or the part of a sentence the span boundary left.
        if not last and (item or _LIST_ITEM.match(text)) and len(text.split()) > HEADING_WORDS:
            return text
        ends = [match.end() for match in _SENTENCE_STOP.finditer(text)]
        return text[: ends[-1]].strip() if ends else None
    return text
