"""The README is for users: it stays short, goes from install to deploy in order, and everything it names is
real — its commands run as written from a clone (on the files the clone has), its Python runs, each `make` target,
file and link it names exists. The internals it links to live in docs/ (settings: tests/test_settings_documented.py;
figures: tests/test_readme_figures.py)."""

from __future__ import annotations

import glob
import re
import shlex
from pathlib import Path

import pytest

from orc.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {path.name: path.read_text(encoding="utf-8") for path in (ROOT / "docs").glob("*.md")}
MAX_LINES = 450
USER_SECTIONS = [
    "Install",
    "Try it",
    "Ask about your own documents",
    "Use the chat page",
    "Use it from an MCP client",
    "Use it as a library",
]
NOT_RUN = {"serve", "chat", "mcp"}
"""Commands that do not end by themselves (``orc mcp install … --print`` does, and runs)."""


def code_blocks(language: str, text: str = README) -> list[str]:
    """The fenced blocks of ``language`` in ``text``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def shell_lines(text: str = README) -> list[list[str]]:
    """Every command line of the shell blocks, as argv without its comment (continuation lines joined)."""
    commands = []
    for block in code_blocks("sh", text):
        for line in block.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv:
                commands.append(argv)
    return commands


def orc_commands() -> list[list[str]]:
    """The README's ``orc …`` lines that run offline and end by themselves, as argv after ``orc``."""
    runnable = []
    for argv in shell_lines():
        if argv[0] != "orc":
            continue
        if argv[1] in NOT_RUN and not (argv[1] == "mcp" and "--print" in argv):
            continue
        runnable.append(argv[1:])
    return runnable


@pytest.fixture
def clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder that reads like the root of a clone (its top-level entries linked), so the README's
    relative paths resolve as a user's would and what the commands write stays in the test's folder."""
    folder = tmp_path / "orc"
    folder.mkdir()
    for entry in ("orc", "docs", "bench", "mcp_server", "prompts", "pyproject.toml"):
        (folder / entry).symlink_to(ROOT / entry)
    monkeypatch.chdir(folder)
    return folder


def test_the_readme_is_short_and_goes_from_install_to_deploy_in_order() -> None:
    headings = re.findall(r"^## (.+)$", README, flags=re.MULTILINE)

    assert len(README.splitlines()) <= MAX_LINES
    assert headings[: len(USER_SECTIONS)] == USER_SECTIONS
    assert headings.index("Deploy to Azure") > headings.index("Use it as a library")
    assert "pip install -e ." in README and "orc serve" in README


def test_the_readme_starts_with_the_two_commands_that_set_up_a_fresh_machine() -> None:
    assert shell_lines()[:2] == [["make", "demo"], ["make", "test"]]


def test_the_commands_after_make_demo_find_orc_and_the_demos_conversation() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo_home = re.search(r"^demo:.*\n\t(ORC_HOME=\S+)", makefile, re.MULTILINE)
    install = README[README.index("## Install") : README.index("## Try it")]
    chat = [argv for argv in shell_lines() if "chat" in argv and "demo" in argv]

    # make demo installs orc in .venv, not on the PATH: the README says how to reach it.
    assert ". .venv/bin/activate" in install
    # The demo keeps its data apart: a chat without the demo's ORC_HOME would open an empty "demo".
    assert demo_home and chat == [[demo_home.group(1), "orc", "chat", "--conversation", "demo"]]


def test_every_file_folder_and_link_the_readme_names_exists() -> None:
    linked = re.findall(r"\]\(([^)#\s]+)", README)
    named = re.findall(r"`((?:orc|docs|bench|tests|infra|tools|mcp_server|prompts)/[\w./-]+)`", README)
    paths_in_commands = [arg.lstrip("@").split("=", 1)[-1] for argv in shell_lines() for arg in argv if "/" in arg]
    local = [path for path in paths_in_commands if path.split("/")[0] in ("orc", "docs", "bench")]

    assert "docs/web-dark.png" in linked and "docs/configuration.md" in linked
    assert "orc/samples/lease-agreement.md" in local
    missing = [path for path in [*linked, *named, *local] if not (ROOT / path).exists()]
    assert missing == []


def test_every_make_target_the_readme_names_is_in_the_makefile() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = {argv[1] for argv in shell_lines() if argv[0] == "make"} | set(re.findall(r"`make (\w[\w-]*)`", README))

    assert {"demo", "test"} <= targets
    assert [target for target in targets if not re.search(rf"^{target}:", makefile, re.MULTILINE)] == []


def test_every_python_block_of_the_readme_runs_as_written(clone: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = code_blocks("python")
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {"__name__": "__main__"})
    assert "60 days" in capsys.readouterr().out


def test_every_orc_command_of_the_readme_runs_as_written(clone: Path) -> None:
    commands = orc_commands()
    assert len(commands) >= 10
    for argv in commands:
        expanded = [match for arg in argv for match in (sorted(glob.glob(arg)) if "*" in arg else [arg])]
        assert main(expanded) == 0, argv
    assert (clone / "eval-samples.md").is_file()


def test_the_docs_link_only_to_what_exists() -> None:
    missing = [
        (name, target)
        for name, text in DOCS.items()
        for target in re.findall(r"\]\(([^)#\s]+)", text)
        if not target.startswith("http") and not (ROOT / "docs" / target).exists()
    ]
    assert missing == []
