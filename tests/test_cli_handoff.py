"""``orc ask`` at a terminal: a turn that pauses for context shows the request and takes text, a file, a
suggestion or a skip from the user; the answer then goes on in the same run."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

from orc.cli.commands import Console, ask
from orc.cli.handoff import Terminal
from orc.composition import build_runtime
from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.turns import TurnRequest

LEASE = b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first day of each month."
QUESTION = TurnRequest(question="What is the parking fee?", conversation_id="c1", blob_names=["lease.txt"])


def typed(*lines: str) -> tuple[list[str], object]:
    """A terminal that answers each prompt with the next line (and records the prompts)."""
    prompts: list[str] = []
    answers: Iterator[str] = iter(lines)

    def read_line(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    return prompts, read_line


async def run(*lines: str) -> tuple[str, str, list[str]]:
    out, err = io.StringIO(), io.StringIO()
    prompts, read_line = typed(*lines)
    async with build_runtime(Settings()) as services:
        await services.foundation.session_files.add(LOCAL_PRINCIPAL, "c1", [Upload("lease.txt", LEASE)])
        terminal = Terminal(read_line, services.foundation.file_texts)
        assert await ask(services.orchestrator, Console(out, err), QUESTION, terminal)  # type: ignore[arg-type]
    return out.getvalue(), err.getvalue(), prompts


async def test_pasted_text_answers_the_paused_question() -> None:
    out, err, prompts = await run("Parking costs 80 euros per month.", "")

    assert "The documents do not answer this yet" in err and "[1] lease.txt: " in err and "::" not in err
    assert prompts[0].startswith("\nevidence: paste text")
    assert "80 euros" in out and "supplied" in out


async def test_a_file_path_supplies_the_files_text(tmp_path: Path) -> None:
    note = tmp_path / "parking.md"
    note.write_text("# Parking\n\nParking costs 80 euros per month.\n")

    out, _, _ = await run(str(note))

    assert "80 euros" in out


async def test_enter_skips_and_the_answer_says_it_went_on_without_the_context() -> None:
    out, err, _ = await run("")

    assert "Answered without the requested context" in out and "[context] run without" in err.replace("_", " ")


async def test_a_piped_run_is_never_asked() -> None:
    out, err = io.StringIO(), io.StringIO()
    async with build_runtime(Settings()) as services:
        await services.foundation.session_files.add(LOCAL_PRINCIPAL, "c1", [Upload("lease.txt", LEASE)])
        assert await ask(services.orchestrator, Console(out, err), QUESTION, None)

    assert "The documents do not answer this yet" not in err.getvalue() and out.getvalue().strip()
