"""Exports: citation markers become footnotes quoting the spans; the PDF renders and its text reads back."""

from __future__ import annotations

import io
import itertools
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pypdf import PdfReader

from orc.contracts import Citation
from orc.conversations import AssistantMessage, Conversation, ConversationSummary, Feedback, Turn, UserMessage
from orc.conversations.export import answer_html, filename, footnote, human_time, to_markdown, to_pdf, where
from orc.conversations.titles import title_from_question

NOTICE = Citation(
    ref="lease.txt::S2",
    document="lease.txt",
    span_id="S2",
    page=3,
    quote="60 days' written notice.",
    section="Termination › Notice",
)
RENT = Citation(ref="lease.txt::S1", document="lease.txt", span_id="S1", quote="The rent is 1,450 euros.")


def conversation(turns: int = 2) -> Conversation:
    return Conversation(
        summary=ConversationSummary(
            conversation_id="c", title="Lease – “questions”", message_count=2 * turns, created_at="t0", updated_at="t1"
        ),
        turns=[
            Turn(
                seq=seq,
                user=UserMessage(content=f"Question {seq}: notice? Ünïcödé ✓", created_at=f"u{seq}"),
                assistant=AssistantMessage(
                    content="Notice is 60 days [lease.txt::S2]. Rent is 1,450 euros [lease.txt::S1] [lease.txt::S2].",
                    citations=[NOTICE, RENT],
                    created_at=f"a{seq}",
                ),
            )
            for seq in range(1, turns + 1)
        ],
    )


def test_markers_become_numbered_footnotes_and_a_marker_naming_nothing_cited_is_dropped() -> None:
    result = footnote("A [lease.txt::S2]. B [lease.txt::S1] [lease.txt::S2]. C [other.txt::S9].", [NOTICE, RENT], 4)

    assert result.text == "A[^4]. B[^5][^4]. C."
    assert result.notes == [(4, NOTICE), (5, RENT)]


def test_two_sentences_quoting_one_span_get_a_footnote_each() -> None:
    deposit = Citation(ref="lease.txt::S1", document="lease.txt", span_id="S1", quote="The deposit is 2,900 euros.")
    answer = (
        "The deposit is 2,900 euros. [lease.txt::S1] The rent is 1,450 euros. [lease.txt::S1; supplied::evidence-1]"
    )
    supplied = Citation(ref="supplied::evidence-1", document="supplied", span_id="evidence-1", quote="Parking: 40.")

    result = footnote(answer, [RENT, deposit, supplied], 1)

    assert result.text == "The deposit is 2,900 euros.[^1] The rent is 1,450 euros.[^2][^3]"
    assert result.notes == [(1, deposit), (2, RENT), (3, supplied)]


def test_times_are_written_for_people() -> None:
    assert human_time("2026-11-26T14:05:09.123456+00:00") == "26 Nov 2026, 14:05 UTC"
    assert human_time("2026-11-26T15:05:09+01:00") == "26 Nov 2026, 14:05 UTC"
    assert human_time("not a time") == "not a time"


def test_the_pdf_lays_out_the_answer_markdown_left_aligned_instead_of_printing_it() -> None:
    marked = conversation(1)
    answer = marked.turns[0].assistant.model_copy(
        update={"content": "The tenant *may not* sublet [lease.txt::S2].\n\n- **one**\n- `two`\n\n<b>raw</b>"}
    )
    marked = marked.model_copy(update={"turns": [marked.turns[0].model_copy(update={"assistant": answer})]})

    text = PdfReader(io.BytesIO(to_pdf(marked, {}))).pages[0].extract_text()

    assert "may not" in text and "*may not*" not in text and "[^" not in text and "**" not in text
    assert "<b>raw</b>" in text  # raw HTML in an answer is text, never markup
    assert "•" in text
    html = answer_html("A *b* [^1] ![x](http://example.com/x.png)")
    assert "<em>b</em>" in html and "<sup>1</sup>" in html and "<img" not in html


def test_markdown_numbers_footnotes_across_the_conversation_and_shows_feedback() -> None:
    text = to_markdown(conversation(), {"msg-2-assistant": Feedback(rating="down", comment="too short")})

    assert "[^3]" in text and "[^4]" in text
    assert "[^1]: lease.txt, page 3, section Termination › Notice: “60 days' written notice.”" in text
    assert "[^2]: lease.txt: “The rent is 1,450 euros.”" in text
    assert "*Feedback: not helpful: too short*" in text
    assert "> Question 1: notice? Ünïcödé ✓" in text


def test_the_pdf_renders_with_pdftoppm_and_its_text_reads_back(tmp_path: Path) -> None:
    pdftoppm = shutil.which("pdftoppm")
    if pdftoppm is None:
        if os.environ.get("CI"):
            pytest.fail("pdftoppm (poppler-utils) is missing; make test installs it")
        pytest.skip("pdftoppm (poppler-utils) is not installed")
    data = to_pdf(conversation(12), {})
    (tmp_path / "export.pdf").write_bytes(data)

    subprocess.run([pdftoppm, "-png", "-r", "40", str(tmp_path / "export.pdf"), str(tmp_path / "page")], check=True)

    pages = sorted(tmp_path.glob("page*.png"))
    reader = PdfReader(io.BytesIO(data))
    assert len(pages) == len(reader.pages) >= 2
    assert all(page.stat().st_size > 1000 for page in pages)
    text = " ".join(page.extract_text() for page in reader.pages)
    assert "Question 12" in text and "Sources" in text and "60 days' written notice." in text


def test_footnotes_say_where_to_read_by_page_and_section_never_by_span_id() -> None:
    supplied = Citation(ref="supplied::evidence-1", document="supplied", span_id="evidence-1", quote="Parking: 40.")
    named = supplied.model_copy(update={"document": "parking.txt"})

    assert where(NOTICE) == "lease.txt, page 3, section Termination › Notice"
    assert where(RENT) == "lease.txt"
    assert where(supplied) == "text supplied to a context request"
    assert where(named) == "text supplied to a context request (parking.txt)"
    pdf = " ".join(page.extract_text() for page in PdfReader(io.BytesIO(to_pdf(conversation(1), {}))).pages)
    assert "lease.txt, page 3, section Termination › Notice" in pdf and "S2" not in pdf


def answer_baselines(pdf: bytes, size: float) -> list[float]:
    """The baselines of the first answer's lines of text at ``size`` points, top to bottom: those after the
    ``orc (…)`` label and before the next label or "Sources"."""
    found: list[tuple[float, float, str]] = []

    def visit(text: str, _cm: object, tm: list[float], _font: object, font_size: float) -> None:
        if text.strip():
            found.append((tm[5], font_size, text))

    PdfReader(io.BytesIO(pdf)).pages[0].extract_text(visitor_text=visit)
    start = next(i for i, (_, _, text) in enumerate(found) if text.startswith("orc ("))
    lines: list[float] = []
    for y, font_size, text in found[start + 1 :]:
        if text.startswith(("You (", "Sources")):
            break
        if font_size == size and (not lines or lines[-1] != y):
            lines.append(y)
    return lines


def test_pdf_answer_lines_leave_room_for_their_footnote_superscripts() -> None:
    sentence = "Either party may end the lease after the first six months by giving written notice"
    long = conversation(1)
    answer = long.turns[0].assistant.model_copy(
        update={"content": f"{sentence} [lease.txt::S2]. " * 6 + "\n\n- one [lease.txt::S1]\n- two [lease.txt::S2]"}
    )
    long = long.model_copy(update={"turns": [long.turns[0].model_copy(update={"assistant": answer})]})

    baselines = answer_baselines(to_pdf(long, {}), 11)

    assert len(baselines) >= 5  # a wrapped paragraph and a list
    gaps = [above - below for above, below in itertools.pairwise(baselines)]
    assert min(gaps) >= 1.4 * 11, gaps
    assert "<sup>1,2</sup>" in answer_html("Rent [^1][^2].")  # two notes in a row read 1,2, not 12


def test_export_file_names_come_from_the_title_and_never_carry_path_characters() -> None:
    named = conversation()
    hostile = named.model_copy(update={"summary": named.summary.model_copy(update={"title": '../../etc/"x"'})})

    assert filename(named, "pdf") == "lease-questions.pdf"
    assert filename(hostile, "markdown") == "etc-x.md"


@pytest.mark.parametrize(
    ("question", "title"),
    [
        ("What is the notice period of the lease?", "Notice period of the lease"),
        ("Who won the 1998 football world cup?", "Who won the 1998 football world cup"),
        ("what does clause 4 say", "What does clause 4 say"),
        (
            "What happens to the deposit when the tenant leaves before the end of the first year of the lease?",
            "What happens to the deposit when the tenant leaves before the end of the first year of the lease",
        ),
        ("word " * 50, ("Word " + "word " * 38).strip() + "…"),
    ],
)
def test_a_conversation_is_titled_from_its_first_question_without_a_model(question: str, title: str) -> None:
    assert title_from_question(question) == title


def test_a_table_in_an_answer_is_laid_out_as_a_table_in_the_pdf_not_as_rows_of_pipes() -> None:
    table = (
        "Two ways to watch a file:\n\n"
        "| function | how | cost |\n| --- | :---: | ---: |\n"
        "| `fs.watch` | **events** [lease.txt::S2] | low |\n| fs.watchFile | polling | |\n"
    )
    marked = conversation(1)
    answer = marked.turns[0].assistant.model_copy(update={"content": table})
    marked = marked.model_copy(update={"turns": [marked.turns[0].model_copy(update={"assistant": answer})]})

    text = PdfReader(io.BytesIO(to_pdf(marked, {}))).pages[0].extract_text()

    assert "| ---" not in text and "| function |" not in text
    assert "function" in text and "fs.watchFile" in text and "polling" in text
    assert "events[1]" in text  # the footnote of a cell, in the cell's plain text
