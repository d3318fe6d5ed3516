"""``orc chat``: an interactive conversation on the terminal, answers streamed as they are written.

Lines starting with ``/`` are commands: ``/attach PATH`` attaches a file to the conversation, ``/context TYPE:ID``
focuses the next turns on a context (``/context`` alone clears it), ``/new`` starts a new conversation, ``/quit``
(or end of input) leaves. Anything else is a question.
"""

from __future__ import annotations

import asyncio
import shlex
import uuid
from pathlib import Path
from typing import TextIO

from orc.cli.commands import Console, ask, focus, upload
from orc.composition import Services, build_runtime
from orc.conversations import FocusContext
from orc.documents.records import ContextRef
from orc.errors import OrcError
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.turns import TurnRequest

HELP = "commands: /attach PATH, /context TYPE:ID (or /context to clear), /new, /quit; anything else is a question"


class ChatSession:
    """The state of one ``orc chat``: the conversation, its attached files and the focus context."""

    def __init__(self, services: Services, console: Console, conversation_id: str | None = None) -> None:
        self.services = services
        self.console = console
        self.conversation_id = conversation_id or str(uuid.uuid4())
        self.names: list[str] = []
        self.context: FocusContext | None = None

    async def load(self) -> None:
        """Pick up the files a continued conversation already has."""
        attached = await self.services.session_files.files(LOCAL_PRINCIPAL, self.conversation_id)
        self.names = [record.filename for record in attached]

    async def handle(self, line: str) -> bool:
        """Act on one input line; ``False`` when the chat should end."""
        line = line.strip()
        if not line:
            return True
        if not line.startswith("/"):
            request = TurnRequest(
                question=line, conversation_id=self.conversation_id, blob_names=self.names, context=self.context
            )
            await ask(self.services.orchestrator, self.console, request)
            return True
        command, _, rest = line.partition(" ")
        rest = rest.strip()
        try:
            if command in ("/quit", "/exit", "/q"):
                return False
            if command == "/new":
                self.conversation_id, self.names = str(uuid.uuid4()), []
                self._say(f"new conversation {self.conversation_id}")
            elif command == "/attach":
                await self._attach(rest)
            elif command == "/context":
                await self._focus(rest)
            else:
                self._say(HELP)
        except OrcError as exc:
            self._say(f"error ({exc.code}): {exc.message}")
        return True

    async def _attach(self, rest: str) -> None:
        paths, missing = _paths(rest)
        if not paths:
            self._say("usage: /attach PATH [PATH...]")
            return
        if missing:
            self._say(f"no such file: {', '.join(missing)}")
            return
        names = await upload(self.services.session_files, self.conversation_id, paths, self.console)
        self.names = [*dict.fromkeys([*self.names, *names])]

    async def _focus(self, rest: str) -> None:
        if not rest:
            self.context = None
            self._say("no focus context")
            return
        context = focus(rest)
        assert context is not None
        await self.services.documents.directory.get(LOCAL_PRINCIPAL, ContextRef(context.type, context.id))
        self.context = context
        self._say(f"focus: {context.type}:{context.id}")

    def _say(self, text: str) -> None:
        print(text, file=self.console.err, flush=True)


def _paths(rest: str) -> tuple[list[Path], list[str]]:
    """The paths of ``/attach``'s argument (shell quoting allowed) and those that are not files."""
    paths = [Path(part).expanduser() for part in shlex.split(rest)]
    return paths, [str(path) for path in paths if not path.is_file()]


async def run_chat(settings: Settings, console: Console, stdin: TextIO, conversation_id: str | None) -> int:
    """Read lines from ``stdin`` until ``/quit`` or end of input."""
    async with build_runtime(settings) as services:
        session = ChatSession(services, console, conversation_id)
        await session.load()
        interactive = stdin.isatty()
        print(f"orc chat — conversation {session.conversation_id}; {HELP}", file=console.err, flush=True)
        while True:
            if interactive:
                print("> ", end="", file=console.err, flush=True)
            line = await asyncio.to_thread(stdin.readline)
            if not line or not await session.handle(line):
                break
    return 0
