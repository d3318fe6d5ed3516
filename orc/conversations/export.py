"""A conversation exported whole: JSON, Markdown or PDF, each answer's citations as footnotes quoting the spans.

The citation markers in an answer (``[lease.txt::S3]``) become numbered footnotes, so the export reads as a
document and every claim still points at the passage it came from. Feedback given on an answer is shown under it.
The PDF is laid out by fpdf2 with a Unicode font (DejaVu Sans, Debian's ``fonts-dejavu-core``, when installed);
without one, characters outside Latin-1 are replaced, and the text stays readable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from orc.contracts import Citation
from orc.conversations.models import Conversation, Feedback

ExportFormat = Literal["markdown", "pdf", "json"]
MEDIA_TYPES: dict[ExportFormat, str] = {
    "markdown": "text/markdown; charset=utf-8",
    "pdf": "application/pdf",
    "json": "application/json",
}
EXTENSIONS: dict[ExportFormat, str] = {"markdown": "md", "pdf": "pdf", "json": "json"}

_MARKER = re.compile(r"\[([^\[\]\n]+?::[^\[\]\s]+)\]")
_FONT_CANDIDATES = (
    Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),
    Path("/usr/share/fonts/dejavu/DejaVuSans.ttf"),
    Path("/usr/local/share/fonts/DejaVuSans.ttf"),
)
_RATINGS = {"up": "helpful", "down": "not helpful"}


@dataclass(frozen=True, slots=True)
class Footnoted:
    """An answer whose markers became ``[^n]`` references, with the footnotes they point at (in order)."""

    text: str
    notes: list[tuple[int, Citation]]


def footnote(answer: str, citations: Sequence[Citation], first: int) -> Footnoted:
    """Replace each marker that names a cited span by ``[^n]`` (numbered from ``first``); one note per span."""
    by_ref = {citation.ref: citation for citation in citations}
    numbers: dict[str, int] = {}
    notes: list[tuple[int, Citation]] = []

    def replace(match: re.Match[str]) -> str:
        ref = match.group(1)
        citation = by_ref.get(ref)
        if citation is None:
            return match.group(0)
        if ref not in numbers:
            numbers[ref] = first + len(numbers)
            notes.append((numbers[ref], citation))
        return f"[^{numbers[ref]}]"

    text = _MARKER.sub(replace, answer)
    # Cited spans the text does not mark (a model may cite without a marker) still get their note.
    for citation in citations:
        if citation.ref not in numbers:
            numbers[citation.ref] = first + len(numbers)
            notes.append((numbers[citation.ref], citation))
    return Footnoted(text=text, notes=notes)


def _where(citation: Citation) -> str:
    page = f", page {citation.page}" if citation.page is not None else ""
    return f"{citation.document}, {citation.span_id}{page}"


def _feedback_line(feedback: Feedback | None) -> str | None:
    if feedback is None:
        return None
    comment = f": {feedback.comment}" if feedback.comment else ""
    return f"Feedback: {_RATINGS[feedback.rating]}{comment}"


def to_json(conversation: Conversation, feedback: Mapping[str, Feedback]) -> bytes:
    """The conversation as JSON: summary and every message, with citations and feedback."""
    messages = []
    for turn in conversation.turns:
        messages.append(turn.user.model_dump(mode="json"))
        answer = turn.assistant.model_dump(mode="json")
        answer["feedback"] = (
            feedback[turn.assistant.message_id].model_dump(mode="json")
            if turn.assistant.message_id in feedback
            else None
        )
        messages.append(answer)
    document = {**conversation.summary.model_dump(mode="json"), "messages": messages}
    return json.dumps(document, ensure_ascii=False, indent=2).encode("utf-8")


def to_markdown(conversation: Conversation, feedback: Mapping[str, Feedback]) -> str:
    """The conversation as Markdown, answers' citations as footnotes quoting the spans."""
    summary = conversation.summary
    lines = [
        f"# {_markdown_line(summary.title) or 'Conversation'}",
        "",
        f"*{summary.created_at} – {summary.updated_at}*",
        "",
    ]
    notes: list[tuple[int, Citation]] = []
    for turn in conversation.turns:
        answer = footnote(turn.assistant.content, turn.assistant.citations, len(notes) + 1)
        notes += answer.notes
        lines += [f"**You** ({turn.user.created_at}):", "", _quote_block(turn.user.content), ""]
        lines += [f"**orc** ({turn.assistant.created_at}):", "", answer.text, ""]
        note = _feedback_line(feedback.get(turn.assistant.message_id))
        if note:
            lines += [f"*{note}*", ""]
    if notes:
        lines.append("---")
        lines.append("")
        for number, citation in notes:
            lines.append(f"[^{number}]: {_where(citation)}: “{_markdown_line(citation.quote)}”")
    return "\n".join(lines).rstrip() + "\n"


def _markdown_line(text: str) -> str:
    return " ".join(text.split())


def _quote_block(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines()) or ">"


def to_pdf(conversation: Conversation, feedback: Mapping[str, Feedback]) -> bytes:
    """The conversation as a PDF; CPU-bound, so callers on an event loop run it in a thread."""
    from fpdf import FPDF  # imported here: only exports need it

    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.set_title(conversation.summary.title or "Conversation")
    pdf.set_creator("orc")
    font = next((path for path in _FONT_CANDIDATES if path.is_file()), None)
    family = "Helvetica"
    if font is not None:
        pdf.add_font("orc", "", str(font))
        family = "orc"
    text = _text_for(font is not None)
    pdf.add_page()
    width = pdf.epw

    def paragraph(body: str, size: float, *, gap: float = 2.0) -> None:
        pdf.set_font(family, size=size)
        pdf.multi_cell(width, size * 0.5, text(body), new_x="LMARGIN", new_y="NEXT")
        pdf.ln(gap)

    paragraph(conversation.summary.title or "Conversation", 16)
    paragraph(f"{conversation.summary.created_at} – {conversation.summary.updated_at}", 9, gap=4)
    notes: list[tuple[int, Citation]] = []
    for turn in conversation.turns:
        answer = footnote(turn.assistant.content, turn.assistant.citations, len(notes) + 1)
        notes += answer.notes
        paragraph(f"You ({turn.user.created_at}):", 9, gap=0.5)
        paragraph(turn.user.content, 11)
        paragraph(f"orc ({turn.assistant.created_at}):", 9, gap=0.5)
        paragraph(answer.text, 11)
        note = _feedback_line(feedback.get(turn.assistant.message_id))
        if note:
            paragraph(note, 9)
        pdf.ln(2)
    if notes:
        paragraph("Sources", 13)
        for number, citation in notes:
            paragraph(f"[^{number}] {_where(citation)}: “{' '.join(citation.quote.split())}”", 9, gap=1)
    return bytes(pdf.output())


def _text_for(unicode_font: bool) -> Callable[[str], str]:
    return _identity if unicode_font else _latin1


def _identity(text: str) -> str:
    return text


def _latin1(text: str) -> str:
    # The core fonts cover Latin-1 only; typographic quotes and dashes have Latin-1 stand-ins.
    text = text.translate({0x201C: '"', 0x201D: '"', 0x2018: "'", 0x2019: "'", 0x2013: "-", 0x2014: "-", 0x2026: "..."})
    return text.encode("latin-1", "replace").decode("latin-1")


def export(conversation: Conversation, feedback: Mapping[str, Feedback], fmt: ExportFormat) -> bytes:
    """The conversation in ``fmt`` as bytes (the PDF is CPU-bound: call this in a thread for ``pdf``)."""
    if fmt == "json":
        return to_json(conversation, feedback)
    if fmt == "markdown":
        return to_markdown(conversation, feedback).encode("utf-8")
    return to_pdf(conversation, feedback)


def filename(conversation: Conversation, fmt: ExportFormat) -> str:
    """A safe download name from the title: ``notice-period-of-the-lease.md``."""
    slug = re.sub(r"[^a-z0-9]+", "-", conversation.summary.title.lower()).strip("-")[:60] or "conversation"
    return f"{slug}.{EXTENSIONS[fmt]}"


__all__ = ["MEDIA_TYPES", "ExportFormat", "export", "filename", "footnote", "to_json", "to_markdown", "to_pdf"]
