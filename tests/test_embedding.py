"""Safe to embed (issue 26 item 4): the README's library example, saved and run as a script, runs once — its
documents parsed in worker processes that import the script again — and the same script without its
``if __name__ == "__main__":`` guard still runs once, its documents parsed in threads, with one warning."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orc.composition import build_runtime
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from tests.test_readme import code_blocks

GUARD = 'if __name__ == "__main__":  # documents are parsed in worker processes, which import this file again\n    '
QUESTIONS = ["How much notice is needed to end the lease?", "And the deposit?"]
SAMPLE = "orc/samples/lease-agreement.md"


def library_example() -> str:
    """The README's example, asking about a PDF (which is parsed in a worker process) instead of its sample."""
    (example,) = [block for block in code_blocks("python") if "build_runtime" in block]
    assert SAMPLE in example
    return example.replace(SAMPLE, "lease.pdf")


def write_lease_pdf(path: Path) -> None:
    from fpdf import FPDF

    document = FPDF()
    document.add_page()
    document.set_font("helvetica", size=11)
    for line in ["Either party may end the lease by giving 60 days' written notice.", "The deposit is 1,500 euros."]:
        document.multi_cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    document.output(str(path))


def run_as_a_script(source: str, folder: Path) -> subprocess.CompletedProcess[str]:
    write_lease_pdf(folder / "lease.pdf")
    script = folder / "ask_lease.py"
    script.write_text(source, encoding="utf-8")
    # Worker processes on (the test suite parses in threads): the point is what a spawned worker imports.
    env = {**os.environ, "ORC_HOME": str(folder / "home"), "ORC_EXTRACTION_PROCESSES": "1"}
    return subprocess.run(
        [sys.executable, script.name], cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def stored_questions(folder: Path) -> list[str]:
    async def read() -> list[str]:
        async with build_runtime(Settings(home=folder / "home")) as services:
            turns = await services.foundation.conversations.turns(LOCAL_PRINCIPAL, "conv-1")
        return [turn.user.content for turn in turns]

    return asyncio.run(read())


def answers_printed(stdout: str) -> list[str]:
    """The lines the example prints for its first answer (``print(result.answer)``; its citations are indented)."""
    return [line for line in stdout.splitlines() if "60 days" in line and not line.startswith(("token", "final", " "))]


def test_the_readme_library_example_runs_once_as_a_script(tmp_path: Path) -> None:
    source = library_example()
    assert GUARD in source

    ran = run_as_a_script(source, tmp_path)

    assert ran.returncode == 0, ran.stderr[-2000:]
    assert len(answers_printed(ran.stdout)) == 1, ran.stdout
    assert "parsed in threads" not in ran.stderr
    assert stored_questions(tmp_path) == QUESTIONS


def test_a_script_without_a_main_guard_runs_once_with_documents_parsed_in_threads_and_one_warning(
    tmp_path: Path,
) -> None:
    source = library_example().replace(GUARD, "")
    assert "\nasyncio.run(main())" in source

    ran = run_as_a_script(source, tmp_path)

    assert ran.returncode == 0, ran.stderr[-2000:]
    assert len(answers_printed(ran.stdout)) == 1, ran.stdout
    assert ran.stderr.count("parsed in threads") == 1, ran.stderr
    assert "ask_lease.py" in ran.stderr
    assert stored_questions(tmp_path) == QUESTIONS


@pytest.mark.parametrize(
    ("source", "guarded"),
    [
        ('"""doc"""\nimport asyncio\nX = 1\ndef main(): ...\nif __name__ == "__main__":\n    main()\n', True),
        ("try:\n    import uvloop\nexcept ImportError:\n    pass\nclass A: ...\n", True),
        ("import asyncio\nasyncio.run(main())\n", False),
        ("for x in range(3):\n    print(x)\n", False),
        ("with open('f') as f:\n    pass\n", False),
    ],
)
def test_a_main_module_is_unguarded_when_its_top_level_runs_anything(
    source: str, guarded: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import types

    from orc.documents.parsing.extraction_pool import unguarded_main

    path = tmp_path / "program.py"
    path.write_text(source, encoding="utf-8")
    main = types.ModuleType("__main__")
    main.__file__ = str(path)
    main.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", main)

    assert (unguarded_main() is None) is guarded
