"""The orc command: ask with files, follow-ups in a conversation, and the demo on the bundled samples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orc.cli import main
from orc.cli.answer_text import AnswerText, readable


def test_ask_attaches_files_and_prints_the_answer_with_citations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lease = tmp_path / "lease.txt"
    lease.write_text("The monthly rent is 1,450 euros.\n\nThe notice period is 60 days.\n")

    status = main(["ask", "What is the monthly rent?", "--file", str(lease), "--conversation", "cli-conv"])

    out, err = capsys.readouterr()
    assert status == 0
    assert "1,450 euros" in out
    assert "[1] lease.txt: “The monthly rent is 1,450 euros.”" in out
    assert "attached lease.txt (new" in err
    assert "%]" in err  # progress lines

    status = main(["ask", "And the notice period?", "--conversation", "cli-conv"])
    out, _ = capsys.readouterr()
    assert status == 0
    assert "60 days" in out


def test_ask_refuses_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "hi", "--file", str(tmp_path / "nope.pdf")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_the_demo_answers_every_question_with_citations_and_admits_what_it_cannot_find(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0

    out, _ = capsys.readouterr()
    answers = out.split("\n> ")[1:]
    assert len(answers) == 5
    for answer in answers[:-1]:
        assert "[1] " in answer, answer
    assert "couldn't find" in answers[-1].lower()


def test_the_demo_shows_numbers_that_match_its_source_list_and_ends_with_what_to_try_next(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0

    out, _ = capsys.readouterr()
    assert "::" not in out  # no raw [lease-agreement.md::S2] marker
    for answer in out.split("\n> ")[1:-1]:
        text, *sources = answer.split("\n  [")
        numbers = re.findall(r"\[(\d+)\]", text)
        assert numbers and sorted(set(numbers), key=int) == [source.split("]")[0] for source in sources], answer
    steps = out[out.index("Next:") :]
    assert "chat --conversation demo" in steps and " serve" in steps and "--file PATH" in steps


def test_running_the_demo_again_replaces_its_conversation_instead_of_adding_to_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"]) == 0
    assert main(["demo"]) == 0
    _, err = capsys.readouterr()
    assert main(["sessions", "list"]) == 0

    listed = capsys.readouterr().out.splitlines()
    (demo,) = [line.split() for line in listed if " demo " in line]
    assert demo[demo.index("demo") - 1] == "10"  # five questions, five answers: the same as after one run
    assert "replaced the earlier 'demo' conversation" in err


def test_a_marker_cut_between_tokens_is_numbered_once_it_closes_and_each_quote_gets_its_number() -> None:
    shown = AnswerText()
    tokens = ["The rent is 1,450 euros. [lease.m", "d::S2] Pets are allowed. [lease.md::S2; extra.md::S1]", " [no"]
    text = "".join(shown.feed(token) for token in tokens) + shown.flush()

    assert text == "The rent is 1,450 euros. [1] Pets are allowed. [2][3] [no"
    citations = [
        {"ref": "lease.md::S2", "document": "lease.md", "quote": "Pets are allowed.", "page": 2},
        {"ref": "lease.md::S2", "document": "lease.md", "quote": "The rent is 1,450 euros.", "page": 2},
        {"ref": "extra.md::S1", "document": "extra.md", "quote": "Cats too."},
        {"ref": "supplied::evidence-1", "document": "supplied", "quote": "Parking is 40 euros."},
    ]
    assert shown.sources(citations) == [
        "  [1] lease.md, page 2: “The rent is 1,450 euros.”",
        "  [2] lease.md, page 2: “Pets are allowed.”",
        "  [3] extra.md: “Cats too.”",
        "  [4] your supplied text: “Parking is 40 euros.”",
    ]


def test_suggestions_on_the_terminal_name_documents_not_source_refs() -> None:
    assert readable("lease.pdf::S1: Residential lease. [annex.docx::S2]") == "lease.pdf: Residential lease."


def test_text_the_server_escaped_as_markup_prints_as_the_document_writes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api = tmp_path / "fs-api.txt"
    api.write_text("The exists function takes a path <string> and a callback <Function>.\n")

    status = main(["ask", "What does the exists function take?", "--file", str(api), "--conversation", "api"])

    out, _ = capsys.readouterr()
    assert status == 0
    assert "a path <string> and a callback <Function>" in out
    assert "&lt;" not in out and "&gt;" not in out


def test_an_escape_cut_between_tokens_prints_once_it_is_whole() -> None:
    shown = AnswerText()
    tokens = ["path &l", "t;string&gt; and AT&", "T"]

    assert "".join(shown.feed(token) for token in tokens) + shown.flush() == "path <string> and AT&T"


def test_the_steps_of_an_answer_are_said_in_a_readers_words_not_tool_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hours = tmp_path / "hours.txt"
    hours.write_text("The office opens at eight and closes at six.\n")

    assert main(["ask", "When does the office open?", "--file", str(hours), "--conversation", "steps"]) == 0

    _, err = capsys.readouterr()
    assert "Reading the attached files: done in " in err
    assert "; 1 model call; conversation steps)" in err
    assert "document_chat" not in err and "cache:" not in err and "(s)" not in err
