"""A conversation exported whole: JSON, Markdown or PDF, each answer's citations as footnotes quoting the spans.

The citation markers in an answer (``[lease.txt::S3]``) become numbered footnotes, so the export reads as a
document and every claim still points at the passage it came from. Feedback given on an answer is shown under it;
context requests where they happened (:mod:`orc.conversations.request_history`): between the question they
paused and its answer, or, for a question never answered, with that question.
The PDF is laid out by fpdf2 with a Unicode font (DejaVu Sans, Debian's ``fonts-dejavu-core``, when installed);
without one, characters outside Latin-1 are replaced, and the text stays readable. Answers are Markdown: the PDF
lays them out (markdown-it-py to a small HTML fpdf2 understands) rather than printing ``*may not*`` literally.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from orc.contracts import Citation
from orc.conversations import request_history
from orc.conversations.context_requests import ContextRequestRecord
from orc.conversations.models import Conversation, Feedback
from orc.output_policy import OutputPolicy, as_text
from orc.text.markers import MARKER, MARKER_PATTERN, marker_refs

ExportFormat = Literal["markdown", "pdf", "json"]
MEDIA_TYPES: dict[ExportFormat, str] = {
    "markdown": "text/markdown; charset=utf-8",
    "pdf": "application/pdf",
    "json": "application/json",
}
EXTENSIONS: dict[ExportFormat, str] = {"markdown": "md", "pdf": "pdf", "json": "json"}

_LEADING_SPACE_MARKER = re.compile(r"[ \t]*" + MARKER_PATTERN)
_FONT_FOLDERS = (
    Path("/usr/share/fonts/truetype/dejavu"),
    Path("/usr/share/fonts/dejavu"),
    Path("/usr/local/share/fonts"),
)
_RATINGS = {"up": "helpful", "down": "not helpful"}
SUPPLIED = "supplied"
"""The SourceRef document of text supplied to a context request (``supplied::evidence-1``)."""
ANSWER_LINE_HEIGHT = 1.5
"""Line height of an answer in the PDF, in multiples of its font size: footnote superscripts sit above the line,
and at 1.0 they touch the line above."""


@dataclass(frozen=True, slots=True)
class Footnoted:
    """An answer whose markers became ``[^n]`` references, with the footnotes they point at (in order)."""

    text: str
    notes: list[tuple[int, Citation]]


def _squash(text: str) -> str:
    return " ".join(text.split())


def marker_citations(answer: str, citations: Sequence[Citation]) -> list[list[int]]:
    """For each marker of ``answer`` in order, the indexes of the citations it points at.

    Two sentences quoting one span are two citations (one per quote, as the graph makes them): a marker takes the
    citation whose quote the sentence before it holds, else the first of that span no marker took yet. The page
    links its markers by the same rule (``orc/web/js/chat.js``)."""
    taken: set[int] = set()
    result: list[list[int]] = []
    last = 0
    for match in MARKER.finditer(answer):
        claim = _squash(answer[last : match.start()])
        last = match.end()
        indexes: list[int] = []
        for ref in marker_refs(match.group(1)):
            candidates = [index for index, citation in enumerate(citations) if citation.ref == ref]
            found = next((i for i in candidates if _squash(citations[i].quote) in claim), None)
            if found is None:
                found = next((i for i in candidates if i not in taken), candidates[0] if candidates else None)
            if found is not None and found not in indexes:
                indexes.append(found)
                taken.add(found)
        result.append(indexes)
    return result


def footnote(answer: str, citations: Sequence[Citation], first: int) -> Footnoted:
    """Replace each marker by ``[^n]`` references (numbered from ``first``), one note per quoted sentence; a marker
    that names nothing cited is dropped (a raw ``[x::y]`` never reaches a reader)."""
    targets = iter(marker_citations(answer, citations))
    numbers: dict[int, int] = {}
    notes: list[tuple[int, Citation]] = []

    def number(index: int) -> int:
        if index not in numbers:
            numbers[index] = first + len(numbers)
            notes.append((numbers[index], citations[index]))
        return numbers[index]

    def replace(_match: re.Match[str]) -> str:
        return "".join(f"[^{number(index)}]" for index in next(targets))

    text = _LEADING_SPACE_MARKER.sub(replace, answer)
    # Cited quotes the text does not mark (a model may cite without a marker) still get their note.
    for index in range(len(citations)):
        number(index)
    return Footnoted(text=text, notes=notes)


def human_time(iso: str) -> str:
    """``26 Nov 2026, 14:05 UTC`` from a stored ISO timestamp (as it is when it does not parse)."""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment.day} {moment:%b %Y, %H:%M} UTC"


def where(citation: Citation) -> str:
    """Where a cited sentence is, as a reader looks for it: ``lease.pdf, page 3, section Termination › Notice``
    (span ids are the tools' handles, not a reader's)."""
    if citation.ref.startswith(f"{SUPPLIED}::"):
        named = f" ({citation.document})" if citation.document != SUPPLIED else ""
        return f"text supplied to a context request{named}"
    place = [citation.document]
    if citation.page is not None:
        place.append(f"page {citation.page}")
    if citation.section:
        place.append(f"section {citation.section}")
    return ", ".join(place)


def _feedback_line(feedback: Feedback | None) -> str | None:
    if feedback is None:
        return None
    comment = f": {feedback.comment}" if feedback.comment else ""
    return f"Feedback: {_RATINGS[feedback.rating]}{comment}"


def to_json(
    conversation: Conversation, feedback: Mapping[str, Feedback], requests: Sequence[ContextRequestRecord] = ()
) -> bytes:
    """The conversation as JSON: summary and every message, with citations and feedback, and its context requests
    as ``context_request`` entries where they happened."""
    messages: list[dict[str, object]] = []
    placed = request_history.by_turn(requests)
    for turn in conversation.turns:
        here = placed.pop(turn.seq, [])
        messages += [request_history.entry(r) for r in here if not request_history.answered(r)]
        messages.append(turn.user.model_dump(mode="json"))
        messages += [request_history.entry(r) for r in here if request_history.answered(r)]
        answer = turn.assistant.model_dump(mode="json")
        answer["feedback"] = (
            feedback[turn.assistant.message_id].model_dump(mode="json")
            if turn.assistant.message_id in feedback
            else None
        )
        messages.append(answer)
    messages += [request_history.entry(r) for key in sorted(placed) for r in placed[key]]
    document = {**conversation.summary.model_dump(mode="json"), "messages": messages}
    return json.dumps(document, ensure_ascii=False, indent=2).encode("utf-8")


def to_markdown(
    conversation: Conversation, feedback: Mapping[str, Feedback], requests: Sequence[ContextRequestRecord] = ()
) -> str:
    """The conversation as Markdown, answers' citations as footnotes quoting the sentences."""
    summary = conversation.summary
    lines = [
        f"# {_markdown_line(summary.title) or 'Conversation'}",
        "",
        f"*{_span(summary.created_at, summary.updated_at)}*",
        "",
    ]
    notes: list[tuple[int, Citation]] = []
    placed = request_history.by_turn(requests)
    for turn in conversation.turns:
        here = placed.pop(turn.seq, [])
        for record in (r for r in here if not request_history.answered(r)):
            lines += [f"**You** ({human_time(record.created_at)}):", "", _quote_block(record.question), ""]
            lines += _markdown_request(record)
        answer = footnote(turn.assistant.content, turn.assistant.citations, len(notes) + 1)
        notes += answer.notes
        lines += [f"**You** ({human_time(turn.user.created_at)}):", "", _quote_block(turn.user.content), ""]
        for record in (r for r in here if request_history.answered(r)):
            lines += _markdown_request(record)
        lines += [f"**orc** ({human_time(turn.assistant.created_at)}):", "", answer.text, ""]
        note = _feedback_line(feedback.get(turn.assistant.message_id))
        if note:
            lines += [f"*{note}*", ""]
    for record in (r for key in sorted(placed) for r in placed[key]):
        lines += [f"**You** ({human_time(record.created_at)}):", "", _quote_block(record.question), ""]
        lines += _markdown_request(record)
    if notes:
        lines.append("---")
        lines.append("")
        for number, citation in notes:
            lines.append(f"[^{number}]: {where(citation)}: “{_markdown_line(citation.quote)}”")
    return "\n".join(lines).rstrip() + "\n"


def _span(first: str, last: str) -> str:
    start, end = human_time(first), human_time(last)
    return start if start == end else f"{start} – {end}"


def _markdown_request(record: ContextRequestRecord) -> list[str]:
    first, *rest = request_history.lines(record, human_time)
    return [f"*{first}*", "", *(_markdown_line(line) for line in rest), ""]


def _markdown_line(text: str) -> str:
    return " ".join(text.split())


def _quote_block(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines()) or ">"


_FOOTNOTE_REFS = re.compile(r"(?:\[\^\d+\])+")
_BLOCK = re.compile(r"<(p|ul|ol)(?=[\s>])")


# A table cell as markdown-it writes it; fpdf2 lays out a cell's text in one piece and refuses any tag inside it.
_CELL = re.compile(r"<(t[dh])(?: style=\"text-align:(\w+)\")?>(.*?)(</\1>)", re.DOTALL)
_CELL_SUPERSCRIPT = re.compile(r"<sup>([^<]*)</sup>")
_TAG = re.compile(r"<[^>]*>")


def _superscript(refs: re.Match[str]) -> str:
    return "<sup>" + ",".join(re.findall(r"\d+", refs.group())) + "</sup>"


def _plain_cell(cell: re.Match[str]) -> str:
    """A cell's text without its inline markup (a footnote reads ``[1]``), aligned as its column: what fpdf2 can
    put in a table."""
    tag, align, inner, end = cell.groups()
    text = _TAG.sub("", _CELL_SUPERSCRIPT.sub(r"[\1]", inner))
    return f'<{tag} align="{align}">{text}{end}' if align else f"<{tag}>{text}{end}"


def answer_html(markdown: str) -> str:
    """An answer's Markdown as the small HTML fpdf2 lays out: raw HTML is escaped (never markup), images are not
    fetched (they stay links), tables are tables (their cells as plain text), ``[^n]`` references become
    superscripts (``1,2`` for two in a row) and paragraphs and lists get :data:`ANSWER_LINE_HEIGHT`."""
    from markdown_it import MarkdownIt  # imported here: only PDF exports need it

    # The page renders GitHub's tables (marked), so an answer written with one must not print as rows of pipes.
    renderer = MarkdownIt("commonmark", {"html": False}).disable("image").enable("table")
    html = _CELL.sub(_plain_cell, _FOOTNOTE_REFS.sub(_superscript, renderer.render(markdown)))
    return _BLOCK.sub(rf'<\1 line-height="{ANSWER_LINE_HEIGHT}"', html)


def to_pdf(
    conversation: Conversation, feedback: Mapping[str, Feedback], requests: Sequence[ContextRequestRecord] = ()
) -> bytes:
    """The conversation as a PDF, answers' Markdown laid out (emphasis, lists, code) and left-aligned; CPU-bound,
    so callers on an event loop run it in a thread."""
    from fpdf import FPDF, TextStyle  # imported here: only exports need it

    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.set_title(conversation.summary.title or "Conversation")
    pdf.set_creator("orc")
    fonts = _unicode_fonts()
    family, mono = "Helvetica", "Courier"
    if fonts is not None:
        for style, path in fonts.items():
            if style == "mono":
                pdf.add_font("orcmono", "", str(path))
            else:
                pdf.add_font("orc", style, str(path))
        family, mono = "orc", "orcmono"
    text = _text_for(fonts is not None)
    code = TextStyle(font_family=mono)
    pdf.add_page()
    width = pdf.epw

    def paragraph(body: str, size: float, *, gap: float = 2.0) -> None:
        pdf.set_font(family, size=size)
        # Laid out as text, not HTML: what the output policy escaped ("path &lt;string&gt;") reads as written.
        pdf.multi_cell(width, size * 0.5, text(as_text(body)), align="L", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(gap)

    def markdown(body: str, size: float) -> None:
        pdf.set_font(family, size=size)
        pdf.write_html(text(answer_html(body)), font_family=family, tag_styles={"code": code, "pre": code})
        pdf.ln(2)

    def request(record: ContextRequestRecord, *, with_question: bool) -> None:
        if with_question:
            paragraph(f"You ({human_time(record.created_at)}):", 9, gap=0.5)
            paragraph(record.question, 11)
        paragraph("\n".join(request_history.lines(record, human_time)), 9)

    summary = conversation.summary
    paragraph(summary.title or "Conversation", 16)
    paragraph(_span(summary.created_at, summary.updated_at), 9, gap=4)
    notes: list[tuple[int, Citation]] = []
    placed = request_history.by_turn(requests)
    for turn in conversation.turns:
        here = placed.pop(turn.seq, [])
        for record in (r for r in here if not request_history.answered(r)):
            request(record, with_question=True)
        answer = footnote(turn.assistant.content, turn.assistant.citations, len(notes) + 1)
        notes += answer.notes
        paragraph(f"You ({human_time(turn.user.created_at)}):", 9, gap=0.5)
        paragraph(turn.user.content, 11)
        for record in (r for r in here if request_history.answered(r)):
            request(record, with_question=False)
        paragraph(f"orc ({human_time(turn.assistant.created_at)}):", 9, gap=0.5)
        markdown(answer.text, 11)
        note = _feedback_line(feedback.get(turn.assistant.message_id))
        if note:
            paragraph(note, 9)
        pdf.ln(2)
    for record in (r for key in sorted(placed) for r in placed[key]):
        request(record, with_question=True)
    if notes:
        paragraph("Sources", 13)
        for number, citation in notes:
            paragraph(f"{number}. {where(citation)}: “{' '.join(citation.quote.split())}”", 9, gap=1)
    return bytes(pdf.output())


def _unicode_fonts() -> dict[str, Path] | None:
    """DejaVu Sans for each style fpdf2 may ask for, from the first folder that has the regular face. Debian's
    ``fonts-dejavu-core`` has no oblique faces (``fonts-dejavu-extra`` has): a missing style uses the closest one
    there is, so emphasis is lost before any character is."""
    for folder in _FONT_FOLDERS:
        regular = folder / "DejaVuSans.ttf"
        if not regular.is_file():
            continue

        def face(name: str, fallback: Path, folder: Path = folder) -> Path:
            path = folder / name
            return path if path.is_file() else fallback

        bold = face("DejaVuSans-Bold.ttf", regular)
        return {
            "": regular,
            "B": bold,
            "I": face("DejaVuSans-Oblique.ttf", regular),
            "BI": face("DejaVuSans-BoldOblique.ttf", bold),
            "mono": face("DejaVuSansMono.ttf", regular),
        }
    return None


def _text_for(unicode_font: bool) -> Callable[[str], str]:
    return _identity if unicode_font else _latin1


def _identity(text: str) -> str:
    return text


def _latin1(text: str) -> str:
    # The core fonts cover Latin-1 only; typographic quotes and dashes have Latin-1 stand-ins.
    text = text.translate({0x201C: '"', 0x201D: '"', 0x2018: "'", 0x2019: "'", 0x2013: "-", 0x2014: "-", 0x2026: "..."})
    return text.encode("latin-1", "replace").decode("latin-1")


def export(
    conversation: Conversation,
    feedback: Mapping[str, Feedback],
    fmt: ExportFormat,
    requests: Sequence[ContextRequestRecord] = (),
    policy: OutputPolicy | None = None,
) -> bytes:
    """The conversation in ``fmt`` as bytes (the PDF is CPU-bound: call this in a thread for ``pdf``), with its
    context ``requests`` where they happened.

    Every string of it — title, questions, answers, quotes, file names, feedback, what was supplied — passes the
    output ``policy`` first: a question or a feedback comment was never cleaned when it was stored, and an export
    is rendered by whatever opens the file.
    """
    policy = policy or OutputPolicy()
    conversation = _cleaned(conversation, policy)
    feedback = {message_id: _cleaned(given, policy) for message_id, given in feedback.items()}
    requests = [_cleaned(request, policy) for request in requests]
    if fmt == "json":
        return to_json(conversation, feedback, requests)
    if fmt == "markdown":
        return to_markdown(conversation, feedback, requests).encode("utf-8")
    return to_pdf(conversation, feedback, requests)


_Model = TypeVar("_Model", bound=BaseModel)


def _cleaned(model: _Model, policy: OutputPolicy) -> _Model:
    return type(model).model_validate(_clean_value(model.model_dump(), policy))


def _clean_value(value: Any, policy: OutputPolicy) -> Any:
    if isinstance(value, str):
        return policy.text(value)
    if isinstance(value, dict):
        return {key: _clean_value(item, policy) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean_value(item, policy) for item in value]
    return value


def filename(conversation: Conversation, fmt: ExportFormat) -> str:
    """A safe download name from the title: ``notice-period-of-the-lease.md``."""
    slug = re.sub(r"[^a-z0-9]+", "-", conversation.summary.title.lower()).strip("-")[:60] or "conversation"
    return f"{slug}.{EXTENSIONS[fmt]}"


__all__ = [
    "MEDIA_TYPES",
    "ExportFormat",
    "answer_html",
    "export",
    "filename",
    "footnote",
    "human_time",
    "marker_citations",
    "to_json",
    "to_markdown",
    "to_pdf",
    "where",
]
