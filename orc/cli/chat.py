"""``orc chat``: an interactive conversation on the terminal, answers streamed as they are written.

Lines starting with ``/`` are commands: ``/attach PATH`` attaches a file to the conversation, ``/context TYPE:ID``
focuses the next turns on a context (``/context`` alone clears it), ``/new`` starts a new conversation, ``/quit``
(or end of input) leaves. Anything else is a question.

On a terminal the prompt is prompt-toolkit's: line editing, and the history of earlier questions (arrow keys, saved in
``ORC_HOME``). Ctrl-C at the prompt clears the line; during an answer it stops that answer and comes back to the
prompt; Ctrl-D leaves. The prompt shows at once: orc's graph, models and stores load in the background meanwhile,
and the first question waits for them. Piped input is read line by line, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import importlib
import shlex
import signal
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

from orc.cli.console import Console
from orc.cli.refusals import error_line
from orc.errors import OrcError
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings

if TYPE_CHECKING:
    from orc.composition import Services
    from orc.conversations import FocusContext

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
        attached = await self.services.foundation.session_files.files(LOCAL_PRINCIPAL, self.conversation_id)
        self.names = [record.filename for record in attached]

    async def handle(self, line: str) -> bool:
        """Act on one input line; ``False`` when the chat should end."""
        line = line.strip()
        if not line:
            return True
        if not line.startswith("/"):
            from orc.cli.commands import ask
            from orc.turns import TurnRequest

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
            self._say(error_line(exc.code, exc.message))
        return True

    async def _attach(self, rest: str) -> None:
        from orc.cli.commands import upload

        paths, missing = _paths(rest)
        if not paths:
            self._say("usage: /attach PATH [PATH...]")
            return
        folders = [str(path) for path in paths if path.is_dir()]
        if folders:
            example = Path(folders[0]) / "*"
            self._say(
                error_line(
                    "not_a_file",
                    f"{', '.join(folders)}: a folder, not a file; attach its files (for example /attach {example})",
                )
            )
            return
        if missing:
            self._say(error_line("file_not_found", f"no such file: {', '.join(missing)}"))
            return
        names = await upload(self.services.foundation.session_files, self.conversation_id, paths, self.console)
        self.names = [*dict.fromkeys([*self.names, *names])]

    async def _focus(self, rest: str) -> None:
        if not rest:
            self.context = None
            self._say("no focus context")
            return
        from orc.cli.commands import focus
        from orc.documents.records import ContextRef

        context = focus(rest)
        assert context is not None
        await self.services.foundation.directory.get(LOCAL_PRINCIPAL, ContextRef(context.type, context.id))
        self.context = context
        self._say(f"focus: {context.type}:{context.id}")

    def _say(self, text: str) -> None:
        print(text, file=self.console.err, flush=True)


def _paths(rest: str) -> tuple[list[Path], list[str]]:
    """The paths of ``/attach``'s argument (shell quoting allowed; ``~`` and patterns such as ``notes/*.md``
    expanded, as a shell would) and those that are not files."""
    paths: list[Path] = []
    for part in shlex.split(rest):
        path = Path(part).expanduser()
        matches = sorted(glob.glob(str(path))) if any(char in part for char in "*?[") else []
        paths += [Path(match) for match in matches if Path(match).is_file()] or [path]
    return paths, [str(path) for path in paths if not path.is_file()]


class Lines(Protocol):
    """Where the chat's input comes from."""

    async def read(self) -> str | None:
        """The next line; ``""`` for nothing (a cleared prompt), ``None`` at the end of input."""
        ...


class PipedLines:
    """Lines of a file or pipe, read as they come."""

    def __init__(self, stdin: TextIO) -> None:
        self._stdin = stdin

    async def read(self) -> str | None:
        """The next line, ``None`` at the end of input."""
        line = await asyncio.to_thread(self._stdin.readline)
        return line or None


class TerminalLines:
    """prompt-toolkit's prompt: line editing and a history kept in ``history_file``."""

    def __init__(self, history_file: Path) -> None:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory

        history_file.parent.mkdir(parents=True, exist_ok=True)
        self._session: PromptSession[str] = PromptSession(history=FileHistory(str(history_file)))

    async def read(self) -> str | None:
        """The next line; Ctrl-C clears it (``""``), Ctrl-D ends the chat (``None``)."""
        try:
            return await self._session.prompt_async("> ")
        except KeyboardInterrupt:
            return ""
        except EOFError:
            return None


async def _open_runtime(settings: Settings, stack: contextlib.AsyncExitStack, imported: Awaitable[object]) -> Services:
    """The runtime, once its modules are imported. Entered in the chat's own task: its MCP session's task group
    must be left by the task that entered it."""
    await imported
    from orc.composition import build_runtime

    services: Services = await stack.enter_async_context(build_runtime(settings))
    return services


@contextlib.asynccontextmanager
async def _interruptible() -> AsyncIterator[set[asyncio.Task[object]]]:
    """While inside, Ctrl-C cancels the tasks in the yielded set (the answer being written) instead of the chat."""
    running: set[asyncio.Task[object]] = set()
    loop = asyncio.get_running_loop()

    def interrupt() -> None:
        for task in running:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, interrupt)
    except (NotImplementedError, RuntimeError):  # Windows' loops have no signal handlers: Ctrl-C ends the chat
        yield running
        return
    try:
        yield running
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def run_chat(settings: Settings, console: Console, stdin: TextIO, conversation_id: str | None) -> int:
    """Read questions and commands until ``/quit``, Ctrl-D or the end of input."""
    interactive = stdin.isatty()
    lines: Lines = TerminalLines(settings.home / "chat_history") if interactive else PipedLines(stdin)
    async with contextlib.AsyncExitStack() as stack:
        # The imports run in a thread while the prompt waits for the first line (importing holds no event loop).
        loading = asyncio.ensure_future(asyncio.to_thread(importlib.import_module, "orc.composition"))
        session: ChatSession | None = None
        shown_id = conversation_id or str(uuid.uuid4())
        print(f"orc chat — conversation {shown_id}; {HELP}", file=console.err, flush=True)
        try:
            async with _interruptible() as running:
                while True:
                    line = await lines.read()
                    if line is None:
                        if interactive:
                            print(file=console.err)  # leave the shell's prompt on a line of its own
                        break
                    if session is None:
                        session = ChatSession(await _open_runtime(settings, stack, loading), console, shown_id)
                        await session.load()
                    turn = asyncio.ensure_future(session.handle(line))
                    running.add(turn)
                    try:
                        if not await turn:
                            break
                    except asyncio.CancelledError:
                        if not turn.cancelled():
                            raise
                        print("\n(stopped)", file=console.err, flush=True)
                    finally:
                        running.discard(turn)
        finally:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await loading  # a thread cannot be cancelled: let the import finish before the loop closes
    return 0
