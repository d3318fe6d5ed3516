"""The ``orc`` commands that only read or edit what is stored: ``sessions list|show|export``, ``docs list`` and
``contexts list|put``.

They open the :class:`~orc.composition.Foundation` alone and go through the same services as the HTTP routes and
MCP tools that do the same (the sessions service, the document scopes), without building a model, the graph or
the MCP server: a listing answers in a fraction of the time a turn's machinery takes to load.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from orc.cli.console import NOTHING_YET, Console
from orc.cli.documents import Target, list_contexts, list_documents, list_everything, put_context
from orc.cli.table import table
from orc.composition import open_foundation
from orc.conversations.export import human_time
from orc.documents.records import ContextRef
from orc.output_policy import as_text
from orc.principal import LOCAL_PRINCIPAL
from orc.sessions import Sessions
from orc.settings import Settings

COMMANDS = {("sessions", "list"), ("sessions", "show"), ("sessions", "export"), ("docs", "list")}


def handles(args: argparse.Namespace) -> bool:
    """Whether the parsed command runs on the foundation alone."""
    return args.command == "contexts" or (args.command, getattr(args, "action", None)) in COMMANDS


async def run(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    """Run one of the commands :func:`handles`."""
    async with open_foundation(settings) as foundation:
        if args.command == "sessions":
            return await _sessions(foundation.sessions, args, console)
        if args.command == "contexts":
            if args.action == "list":
                return await list_contexts(foundation, console.out)
            ref = ContextRef.parse(args.type, args.id)
            print(await put_context(foundation, ref, args.name, args.parent), file=console.out)
            return 0
        if args.context is None and args.session is None:
            return await list_everything(foundation, console.out)
        return await list_documents(foundation, Target.parse(args.context, args.session), console.out)


async def _sessions(sessions: Sessions, args: argparse.Namespace, console: Console) -> int:
    if args.action == "list":
        summaries = await sessions.summaries(LOCAL_PRINCIPAL)
        if not summaries:
            print(NOTHING_YET[("sessions", "list")], file=console.out)
        rows = [
            (human_time(s.updated_at), str(s.message_count), s.conversation_id, s.title or "Untitled")
            for s in summaries
        ]
        for line in table(("UPDATED", "MESSAGES", "ID", "TITLE"), rows):
            print(line, file=console.out)
        return 0
    if args.action == "show":
        data, _ = await sessions.export(LOCAL_PRINCIPAL, args.id, "markdown")
        console.out.write(as_text(data.decode("utf-8")))  # read on the terminal, not by a Markdown renderer
        return 0
    data, _ = await sessions.export(LOCAL_PRINCIPAL, args.id, args.format)
    # A PDF is no text for a terminal: without -o it goes to ID.pdf, as --help says.
    output: Path | None = args.output or (Path(f"{args.id}.pdf") if args.format == "pdf" else None)
    if output is None:
        console.out.write(data.decode("utf-8"))
    else:
        await asyncio.to_thread(output.write_bytes, data)
        print(f"wrote {output} ({len(data)} bytes)", file=console.err)
    return 0
