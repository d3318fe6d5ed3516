"""``orc sessions list|show|export|delete`` on the embedded defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypdf import PdfReader

from orc.cli import main


def test_sessions_can_be_listed_shown_exported_and_deleted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lease = tmp_path / "lease.txt"
    lease.write_text("The monthly rent is 1,450 euros.\n\nThe notice period is 60 days.\n")
    assert main(["ask", "What is the monthly rent?", "--file", str(lease), "--conversation", "cli-conv"]) == 0
    capsys.readouterr()

    assert main(["sessions", "list"]) == 0
    listed = capsys.readouterr().out
    assert "cli-conv" in listed and "Monthly rent" in listed

    assert main(["sessions", "show", "cli-conv"]) == 0
    shown = capsys.readouterr().out
    assert "1,450 euros" in shown and "[^1]: lease.txt" in shown

    pdf = tmp_path / "out.pdf"
    assert main(["sessions", "export", "cli-conv", "--format", "pdf", "--output", str(pdf)]) == 0
    assert "1,450 euros" in PdfReader(pdf).pages[0].extract_text()

    assert main(["sessions", "delete", "cli-conv"]) == 0
    assert main(["sessions", "show", "cli-conv"]) == 1
    assert "session_not_found" in capsys.readouterr().err


def test_a_conversation_shown_on_the_terminal_quotes_api_documentation_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api = tmp_path / "fs-api.txt"
    api.write_text("The exists function takes a path <string> and a callback <Function>.\n")
    assert main(["ask", "What does the exists function take?", "--file", str(api), "--conversation", "api"]) == 0
    capsys.readouterr()

    assert main(["sessions", "show", "api"]) == 0

    shown = capsys.readouterr().out
    assert shown.count("a path <string> and a callback <Function>") == 2  # the answer and its footnote
    assert "&lt;" not in shown
