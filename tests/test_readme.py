"""The README is the operator's reference: it opens with the two commands and its examples run (its settings
table: tests/test_settings_documented.py)."""

from __future__ import annotations

import glob
import re
import shlex
from pathlib import Path

import pytest

from orc.cli import main

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_the_readme_opens_with_what_a_user_needs_in_order() -> None:
    opening = README[: README.index("\n---\n")]
    headings = re.findall(r"^## (.+)$", opening, flags=re.MULTILINE)
    assert headings == ["Install", "Try it", "Ask about your own documents", "Use the chat page", "Deploy", "Develop"]
    assert "pip install" in opening and "make demo" in opening and "orc serve" in opening and "make test" in opening
    assert "docs/deploying-to-azure.md" in opening


def test_every_screenshot_and_document_the_readme_links_exists() -> None:
    root = Path(__file__).resolve().parents[1]
    linked = re.findall(r"\]\((docs/[^)#]+)", README)
    assert "docs/web-dark.png" in linked and "docs/web-phone.png" in linked and "docs/web-empty.png" in linked
    missing = [path for path in linked if not (root / path).exists()]
    assert missing == []


def code_blocks(language: str) -> list[str]:
    """The README's fenced blocks of ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", README, flags=re.MULTILINE | re.DOTALL)


def orc_commands() -> list[list[str]]:
    """Every ``orc …`` line of the README's shell blocks that runs offline and ends by itself (not serve, mcp or the
    interactive chat), as argv without the comment."""
    commands = []
    for block in code_blocks("sh"):
        for line in block.splitlines():
            if not line.startswith("orc "):
                continue
            argv = shlex.split(line, comments=True)[1:]
            if argv[0] not in ("serve", "mcp", "chat"):
                commands.append(argv)
    return commands


def write_samples(folder: Path) -> None:
    """The files the README's examples name: a lease PDF, an annex DOCX and a folder of contracts."""
    from docx import Document
    from fpdf import FPDF

    def pdf(path: Path, lines: list[str]) -> None:
        document = FPDF()
        document.add_page()
        document.set_font("helvetica", size=11)
        for line in lines:
            document.multi_cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
        document.output(str(path))

    lease = ["Either party may end the lease by giving 60 days' written notice.", "The deposit is 1,500 euros."]
    pdf(folder / "lease.pdf", lease)
    annex = Document()
    annex.add_paragraph("Annex: the tenant may keep one cat.")
    annex.save(str(folder / "annex.docx"))
    (folder / "contracts").mkdir()
    pdf(folder / "contracts" / "supply.pdf", ["The supply contract requires 30 days' notice to terminate."])


@pytest.fixture
def samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    write_samples(folder)
    monkeypatch.chdir(folder)
    return folder


def test_every_python_block_of_the_readme_runs_as_written(samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = code_blocks("python")
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "__main__"})
    assert "60 days" in capsys.readouterr().out


def test_every_orc_command_of_the_readme_runs_as_written(samples: Path) -> None:
    commands = orc_commands()
    assert len(commands) >= 10
    for argv in commands:
        expanded = [match for arg in argv for match in (sorted(glob.glob(arg)) if "*" in arg else [arg])]
        assert main(expanded) == 0, argv
