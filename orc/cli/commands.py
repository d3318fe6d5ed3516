"""What the ``orc`` subcommands do once their arguments are parsed (imported only then: ``orc --help`` stays fast)."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import sys
import time
import uuid
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from orc.cli.console import Console
from orc.cli.documents import (
    Target,
    add_documents,
    parse_context,
    remove_document,
)
from orc.cli.handoff import Terminal, resume_interactively
from orc.composition import Services, build_runtime
from orc.conversations import FocusContext
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.documents.sessions import SessionFiles
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.turns import ContextRequiredEvent, TurnRequest
from orc.turns.service import Orchestrator

DEMO_CONVERSATION = "demo"
DEMO_QUESTIONS = (
    "How much notice is needed to end the lease?",
    "And what happens to the security deposit?",
    "What is the battery life of the Aurora X2 headphones?",
    "How many vacation days do new employees get?",
    "Who won the 1998 football world cup?",
)
PROGRESS_SECONDS = 2.0
"""How often ``orc ask --file`` says a large file is still being processed."""


async def ask(
    orchestrator: Orchestrator, console: Console, request: TurnRequest, terminal: Terminal | None = None
) -> bool:
    """Stream one turn to ``console``; ``False`` when it ended in an error. With a ``terminal``, a turn that pauses
    for context asks the user for it and goes on."""
    ok = True
    if terminal is not None:
        request = request.model_copy(update={"context_requests": "allow"})
    events = orchestrator.stream(request)
    while True:
        paused: ContextRequiredEvent | None = None
        async for event in events:
            console.event(event)
            ok = ok and event["type"] != "error"
            if event["type"] == "context_required":
                paused = event
        if paused is None or terminal is None:
            return ok
        events = resume_interactively(orchestrator, paused, terminal, console.err)


async def upload(files: SessionFiles, conversation_id: str, paths: Sequence[Path], console: Console) -> list[str]:
    """Attach ``paths`` to the conversation, saying which file is being processed until each is ready."""
    uploads = []
    for path in paths:
        data = await asyncio.to_thread(path.read_bytes)
        uploads.append(Upload(filename=path.name, data=data))
    mutation = await files.add(LOCAL_PRINCIPAL, conversation_id, uploads, wait_seconds=0)
    for refused in mutation.refused:
        print(f"  skipped {refused.filename} ({refused.code}: {refused.message})", file=console.err)
    jobs = {record.file_id: job for record, job in await files.processing(LOCAL_PRINCIPAL, conversation_id)}
    names = {change.file_id: change.filename for change in mutation.files}
    diffs = {change.file_id: change.diff for change in mutation.files}
    for change in mutation.files:
        if change.file_id not in jobs:
            print(f"  attached {change.filename} ({change.diff})", file=console.err)
    pending = {job: file_id for file_id, job in jobs.items() if file_id in names}
    started = time.monotonic()
    for file_id in pending.values():
        print(f"  processing {names[file_id]}…", file=console.err, flush=True)
    while pending:
        done, _ = await asyncio.wait(pending, timeout=PROGRESS_SECONDS)
        for job in done:
            file_id = pending.pop(job)
            result = job.result()
            reason = f": {result.reason}" if result.reason else ""
            elapsed = time.monotonic() - started
            print(
                f"  attached {names[file_id]} ({diffs[file_id]}; {result.outcome}{reason} in {elapsed:.1f} s)",
                file=console.err,
            )
        if pending and not done:
            still = ", ".join(names[file_id] for file_id in pending.values())
            print(f"  still processing {still} ({time.monotonic() - started:.0f} s)", file=console.err, flush=True)
    return [change.filename for change in mutation.files]


async def run_demo(settings: Settings, console: Console) -> int:
    """Load the bundled sample documents into the ``demo`` conversation (replacing an earlier one) and answer a few
    questions about them."""
    samples = resources.files("orc").joinpath("samples")
    paths = sorted(Path(str(entry)) for entry in samples.iterdir() if entry.is_file())
    print(f"orc demo — data in {settings.home.resolve()}", file=console.err)
    async with build_runtime(settings) as services:
        if not await is_new_conversation(services, DEMO_CONVERSATION):
            # Running the demo again shows the demo again: its conversation starts afresh rather than growing.
            await services.orchestrator.delete_session(DEMO_CONVERSATION)
            print(f"  replaced the earlier {DEMO_CONVERSATION!r} conversation", file=console.err)
        names = await upload(services.foundation.session_files, DEMO_CONVERSATION, paths, console)
        ok = True
        for question in DEMO_QUESTIONS:
            print(f"\n> {question}", file=console.out, flush=True)
            request = TurnRequest(question=question, conversation_id=DEMO_CONVERSATION, blob_names=names)
            ok = await ask(services.orchestrator, console, request) and ok
    print(next_steps(settings), file=console.out)
    return 0 if ok else 1


def next_steps(settings: Settings) -> str:
    """What to try after the demo, as commands that run from where the demo ran (same data folder)."""
    from orc.settings import default_home

    program = Path(sys.argv[0]) if sys.argv and Path(sys.argv[0]).name == "orc" else Path("orc")
    if program.is_absolute() and program.is_relative_to(Path.cwd()):
        program = program.relative_to(Path.cwd())
    home = "" if settings.home.resolve() == default_home().resolve() else f"ORC_HOME={shlex.quote(str(settings.home))} "
    orc = f"{home}{program}"
    return "\n".join(
        [
            "",
            "Next:",
            f"  {orc} chat --conversation {DEMO_CONVERSATION}    keep asking about these files (Ctrl-D leaves)",
            f'  {orc} ask "QUESTION" --file PATH    ask about your own documents',
            f"  {orc} serve    the chat page at http://127.0.0.1:8000",
        ]
    )


def focus(context: str | None) -> FocusContext | None:
    """``--context TYPE:ID`` as the turn's focus context."""
    if context is None:
        return None
    ref = parse_context(context)
    return FocusContext(type=ref.type, id=ref.id)


async def is_new_conversation(services: Services, conversation_id: str) -> bool:
    """Whether the local principal has neither turns nor files under ``conversation_id``."""
    summary = await services.foundation.conversations.get(LOCAL_PRINCIPAL, conversation_id)
    return summary is None and await services.foundation.session_files.header(LOCAL_PRINCIPAL, conversation_id) is None


async def run_ask(settings: Settings, console: Console, args: argparse.Namespace) -> int:
    """Attach ``--file``s (if any) and ask the question; without files, the conversation's files are used."""
    context = focus(args.context)
    async with build_runtime(settings) as services:
        conversation_id = args.conversation or str(uuid.uuid4())
        if args.conversation and await is_new_conversation(services, conversation_id):
            # A mistyped id would otherwise silently lose the conversation's history and files.
            print(f"note: no conversation {conversation_id!r} yet; starting a new one with that id", file=console.err)
        if context is not None:
            await services.foundation.directory.get(LOCAL_PRINCIPAL, ContextRef(context.type, context.id))
        if args.files:
            names = await upload(services.foundation.session_files, conversation_id, args.files, console)
        else:
            attached = await services.foundation.session_files.files(LOCAL_PRINCIPAL, conversation_id)
            names = [record.filename for record in attached]
        request = TurnRequest(
            question=args.question, conversation_id=conversation_id, blob_names=names, context=context
        )
        # Only a person at a terminal can answer a context request; a piped run always gets an answer.
        terminal = Terminal(input, services.foundation.file_texts) if sys.stdin.isatty() else None
        ok = await ask(services.orchestrator, console, request, terminal)
    return 0 if ok else 1


async def run_docs(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    """``orc docs add|remove``: uploads and removals reach the digests, so they run on the whole runtime."""
    async with build_runtime(settings) as services:
        target = Target.parse(args.context, args.session)
        if args.action == "add":
            return await add_documents(services.foundation, target, args.paths, console.err)
        return await remove_document(services.foundation, target, args.document, console.err)


async def delete_session(settings: Settings, conversation_id: str, console: Console) -> int:
    """``orc sessions delete``: the turn service deletes a conversation with its graph checkpoints."""
    async with build_runtime(settings) as services:
        await services.orchestrator.delete_session(conversation_id, LOCAL_PRINCIPAL)
    print(f"deleted {conversation_id}", file=console.err)
    return 0
