"""The orc command: ask with files, follow-ups in a conversation, and the demo on the bundled samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from orc.cli import main


def test_ask_attaches_files_and_prints_the_answer_with_citations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lease = tmp_path / "lease.txt"
    lease.write_text("The monthly rent is 1,450 euros.\n\nThe notice period is 60 days.\n")

    status = main(["ask", "What is the monthly rent?", "--file", str(lease), "--conversation", "cli-conv"])

    out, err = capsys.readouterr()
    assert status == 0
    assert "1,450 euros" in out
    assert "[1] lease.txt S" in out
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
