"""``orc ask`` in a terminal: a turn that pauses for context shows what it needs and takes it from the user.

For each required slot the user pastes text (ending with an empty line), gives a file path (its text is read),
picks a numbered suggestion, or presses Enter to skip; when every slot is skipped the turn answers without the
context. Only an interactive terminal is asked: piped runs never see a paused turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from orc.cli.answer_text import readable
from orc.documents.intake.supplied import FileTexts
from orc.documents.intake.uploads import Upload
from orc.errors import OrcError
from orc.handoff import SuppliedText, SupplyPayload, running_without, supplying
from orc.principal import LOCAL_PRINCIPAL
from orc.turns import ContextRequiredEvent, ContextSuggestion, Event
from orc.turns.service import Orchestrator, Turn

ReadLine = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Terminal:
    """What a paused turn needs to ask the user: a way to read a line, and the intake that reads a file's text
    (the same checks, limits and extraction pool as uploads)."""

    read_line: ReadLine
    texts: FileTexts


def show_request(event: ContextRequiredEvent, err: TextIO) -> None:
    """Print what the paused turn needs, with numbered suggestions."""
    print("\nThe documents do not answer this yet; the answer needs:", file=err)
    number = 0
    for slot in event["required"]:
        print(f"- {slot['description']}", file=err)
        for suggestion in slot["suggestions"]:
            number += 1
            print(f"    [{number}] {readable(suggestion['label'])}", file=err)


async def resume_interactively(
    orchestrator: Orchestrator, event: ContextRequiredEvent, terminal: Terminal, err: TextIO
) -> AsyncIterator[Event]:
    """Ask the user for each slot and resume the turn with the answers (or without, when all are skipped)."""
    show_request(event, err)
    numbered = [suggestion for slot in event["required"] for suggestion in slot["suggestions"]]
    payloads: list[SupplyPayload] = []
    for slot in event["required"]:
        payload = await _ask_for(slot["slot"], numbered, terminal, err)
        if payload is not None:
            payloads.append(payload)
    conversation, request = event["conversation_id"], event["request_id"]
    without = running_without(LOCAL_PRINCIPAL, conversation, request)
    move = supplying(LOCAL_PRINCIPAL, conversation, request, payloads) if payloads else without
    turn = await orchestrator.resume(LOCAL_PRINCIPAL, move)
    if not isinstance(turn, Turn):  # a skipped slot is still missing: go on without it
        turn = await orchestrator.resume(LOCAL_PRINCIPAL, without)
    assert isinstance(turn, Turn)  # running without always resolves the request
    async for resumed in turn.events():
        yield resumed


async def _ask_for(
    slot: str, numbered: list[ContextSuggestion], terminal: Terminal, err: TextIO
) -> SupplyPayload | None:
    read_line = terminal.read_line
    prompt = f"\n{slot}: paste text (end with an empty line), a file path, a suggestion number, or Enter to skip\n> "
    first = (await asyncio.to_thread(read_line, prompt)).strip()
    if not first:
        return None
    if first.isdigit() and 1 <= int(first) <= len(numbered):
        supply = numbered[int(first) - 1]["supply"]
        return SuppliedText(
            slot=slot,
            text=supply.get("text"),
            document_id=supply.get("document_id"),
            source_ref=supply.get("source_ref"),
        )
    path = await asyncio.to_thread(_existing_file, first)
    if path is not None:
        try:
            data = await asyncio.to_thread(path.read_bytes)
            (read,) = await terminal.texts.read(LOCAL_PRINCIPAL, [Upload(path.name, data)])
            text = read.text.strip()
        except (OSError, OrcError) as exc:
            print(f"  could not read {path.name}: {exc}", file=err)
            return None
        return SuppliedText(slot=slot, text=text, name=path.name) if text else None
    lines = [first]
    while True:
        line = await asyncio.to_thread(read_line, "")
        if not line.strip():
            break
        lines.append(line)
    return SuppliedText(slot=slot, text="\n".join(lines))


def _existing_file(text: str) -> Path | None:
    """``text`` as the path of an existing file, or ``None`` (it is then pasted text)."""
    try:
        path = Path(text).expanduser()
        return path if len(text) < 4096 and path.is_file() else None
    except (OSError, ValueError):
        return None
