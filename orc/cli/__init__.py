"""The ``orc`` command: ``demo``, ``ask``, ``docs``, ``contexts``, ``sessions``, ``serve`` and ``mcp``.

It acts as the embedded local principal.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import uuid
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from orc import event_loop
from orc.cli.documents import Target, add_documents, list_documents, put_context
from orc.composition import build_runtime
from orc.documents.records import ContextRef
from orc.documents.sessions import SessionFiles
from orc.documents.uploads import Upload
from orc.errors import InternalError, OrcError
from orc.orchestrator import Orchestrator
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.turns import Event, TurnRequest

DEMO_CONVERSATION = "demo"
DEMO_QUESTIONS = (
    "How much notice is needed to end the lease?",
    "And what happens to the security deposit?",
    "What is the battery life of the Aurora X2 headphones?",
    "How many vacation days do new employees get?",
    "Who won the 1998 football world cup?",
)


class Console:
    """Writes progress to stderr (so it can be hidden) and answers to stdout."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._answering = False

    def event(self, event: Event) -> None:
        """Render one stream event as it happens."""
        if event["type"] == "progress":
            # Once the answer streams, a progress line would land in the middle of it on a terminal.
            if not self._answering:
                print(f"  [{event['percent']:>3}%] {event['message']}", file=self.err, flush=True)
        elif event["type"] == "tool" and event["status"] != "running":
            print(
                f"  [tool] {event['name']} {event['status']} in {event['duration_ms']:.0f} ms",
                file=self.err,
                flush=True,
            )
        elif event["type"] == "token":
            self._answering = True
            print(event["text"], end="", file=self.out, flush=True)
        elif event["type"] == "final":
            self._answering = False
            print(file=self.out)
            for index, citation in enumerate(event["citations"], start=1):
                page = f", page {citation['page']}" if citation.get("page") else ""
                print(
                    f"  [{index}] {citation['document']} {citation['span_id']}{page}: “{citation['quote']}”",
                    file=self.out,
                )
            metadata = event["metadata"]
            print(
                f"  ({metadata['model']}; {metadata['model_calls']} model call(s); tool: {metadata['tool'] or 'none'};"
                f" cache: {metadata['cache'] or 'n/a'}; conversation {event['conversation_id']})",
                file=self.err,
            )
        elif event["type"] == "error":
            print(f"\nerror ({event['code']}): {event['message']}", file=self.err)


async def _ask(orchestrator: Orchestrator, console: Console, request: TurnRequest) -> bool:
    ok = True
    async for event in orchestrator.stream(request):
        console.event(event)
        ok = ok and event["type"] != "error"
    return ok


async def _upload(files: SessionFiles, conversation_id: str, paths: Sequence[Path], console: Console) -> list[str]:
    uploads = []
    for path in paths:
        data = await asyncio.to_thread(path.read_bytes)
        uploads.append(Upload(filename=path.name, data=data))
    mutation = await files.add(LOCAL_PRINCIPAL, conversation_id, uploads)
    for change in mutation.files:
        print(f"  attached {change.filename} ({change.diff})", file=console.err)
    return [upload.filename for upload in uploads]


async def run_demo(settings: Settings, console: Console) -> int:
    """Load the bundled sample documents into a session and answer a few questions about them."""
    samples = resources.files("orc").joinpath("samples")
    paths = sorted(Path(str(entry)) for entry in samples.iterdir() if entry.is_file())
    print(f"orc demo — data in {settings.home.resolve()}", file=console.err)
    async with build_runtime(settings) as services:
        names = await _upload(services.session_files, DEMO_CONVERSATION, paths, console)
        ok = True
        for question in DEMO_QUESTIONS:
            print(f"\n> {question}", file=console.out, flush=True)
            request = TurnRequest(question=question, conversation_id=DEMO_CONVERSATION, blob_names=names)
            ok = await _ask(services.orchestrator, console, request) and ok
    return 0 if ok else 1


async def run_ask(
    settings: Settings, console: Console, question: str, files: Sequence[Path], conversation: str | None
) -> int:
    """Attach ``files`` (if any) and ask ``question``; without files, the conversation's files are used."""
    async with build_runtime(settings) as services:
        conversation_id = conversation or str(uuid.uuid4())
        if files:
            names = await _upload(services.session_files, conversation_id, files, console)
        else:
            attached = await services.session_files.files(LOCAL_PRINCIPAL, conversation_id)
            names = [record.filename for record in attached]
        ok = await _ask(
            services.orchestrator,
            console,
            TurnRequest(question=question, conversation_id=conversation_id, blob_names=names),
        )
    return 0 if ok else 1


def build_parser() -> argparse.ArgumentParser:
    """The ``orc`` argument parser."""
    parser = argparse.ArgumentParser(prog="orc", description="Document-chat agent orchestrator.")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="answer questions about the bundled sample documents")
    ask = commands.add_parser("ask", help="ask a question, optionally attaching files")
    ask.add_argument("question")
    ask.add_argument("--file", dest="files", action="append", type=Path, default=[], metavar="PATH")
    ask.add_argument("--conversation", metavar="ID", help="continue this conversation")
    serve = commands.add_parser("serve", help="run the HTTP API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="worker processes (1). More use more cores; each keeps its own document_chat file cache",
    )
    _add_mcp_commands(commands)
    _add_document_commands(commands)
    _add_session_commands(commands)
    return parser


def _add_mcp_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``orc mcp`` (serve over stdio) and ``orc mcp install claude|vscode|cursor``."""
    from orc.tool_contract import TOOL_NAME_FORMS

    def principal_and_client_options(parser: argparse.ArgumentParser, *, inherit: bool = False) -> None:
        # inherit: `orc mcp --user bob install claude` keeps bob (a subparser's defaults would overwrite it).
        unset: dict[str, Any] = {"default": argparse.SUPPRESS} if inherit else {}
        parser.add_argument("--organization", **(unset or {"default": "default"}))
        parser.add_argument("--user", **(unset or {"default": "default"}))
        parser.add_argument(
            "--tool-names",
            choices=TOOL_NAME_FORMS,
            **(unset or {"default": None}),
            help="dotted (documents.list) or underscore (documents_list, for Claude Desktop, OpenAI, Codex, "
            "Copilot); default: ORC_MCP_TOOL_NAMES, else dotted (install: the form the client accepts)",
        )
        parser.add_argument(
            "--allow-dir",
            dest="allow_dirs",
            action="append",
            type=Path,
            metavar="DIR",
            **(unset or {"default": []}),
            help="a folder whose files session.attach_path may attach (repeatable)",
        )

    mcp = commands.add_parser("mcp", help="run the MCP server over stdio, or install it in an MCP client")
    principal_and_client_options(mcp)
    actions = mcp.add_subparsers(dest="mcp_action")
    install = actions.add_parser("install", help="write (or --print) a client's config to start orc's MCP server")
    install.add_argument("client", choices=["claude", "cursor", "vscode"])
    install.add_argument("--print", dest="print_only", action="store_true", help="print the config, write nothing")
    install.add_argument("--config", type=Path, metavar="PATH", help="write this config file instead")
    install.add_argument("--name", default="orc", help="the server's name in the client (orc)")
    principal_and_client_options(install, inherit=True)


def _run_mcp(args: argparse.Namespace) -> int:
    if args.mcp_action == "install":
        from orc.cli import mcp_install
        from orc.settings import Settings

        launch = mcp_install.ServerLaunch(
            python=Path(sys.executable),
            orc_home=Settings().home,
            organization=args.organization,
            user=args.user,
            allow_dirs=args.allow_dirs,
            tool_names=args.tool_names,
            name=args.name,
        )
        return mcp_install.run(args.client, launch, print_only=args.print_only, config=args.config)
    from mcp_server.__main__ import main as mcp_main

    argv = ["--organization", args.organization, "--user", args.user, "--log-level", args.log_level]
    if args.tool_names:
        argv += ["--tool-names", args.tool_names]
    for folder in args.allow_dirs:
        argv += ["--allow-dir", str(folder)]
    return mcp_main(argv)


def _add_session_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sessions = commands.add_parser("sessions", help="list, show, delete or export conversations")
    actions = sessions.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="your conversations, most recent first")
    for name, help_text in (("show", "print a conversation"), ("delete", "delete a conversation and its files")):
        actions.add_parser(name, help=help_text).add_argument("id", metavar="ID")
    export = actions.add_parser("export", help="export a conversation with its citations as footnotes")
    export.add_argument("id", metavar="ID")
    export.add_argument("--format", choices=["markdown", "pdf", "json"], default="markdown")
    export.add_argument("--output", "-o", type=Path, metavar="PATH", help="write here (default: stdout; pdf: ID.pdf)")


async def run_sessions(settings: Settings, args: argparse.Namespace, console: Console) -> int:
    """``orc sessions list|show|delete|export``."""
    async with build_runtime(settings) as services:
        orchestrator = services.orchestrator
        if args.action == "list":
            for summary in await orchestrator.list_sessions(LOCAL_PRINCIPAL):
                print(
                    f"{summary.conversation_id}\t{summary.updated_at}\t{summary.message_count}\t{summary.title}",
                    file=console.out,
                )
            return 0
        if args.action == "delete":
            await orchestrator.delete_session(args.id, LOCAL_PRINCIPAL)
            print(f"deleted {args.id}", file=console.err)
            return 0
        if args.action == "show":
            data, _ = await orchestrator.export_session(args.id, "markdown", LOCAL_PRINCIPAL)
            console.out.write(data.decode("utf-8"))
            return 0
        data, name = await orchestrator.export_session(args.id, args.format, LOCAL_PRINCIPAL)
    output: Path | None = args.output or (Path(name) if args.format == "pdf" else None)
    if output is None:
        console.out.write(data.decode("utf-8"))
    else:
        await asyncio.to_thread(output.write_bytes, data)
        print(f"wrote {output} ({len(data)} bytes)", file=console.err)
    return 0


def _add_document_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    docs = commands.add_parser("docs", help="add or list documents of a context or a session")
    actions = docs.add_subparsers(dest="action", required=True)
    for name, help_text in (("add", "upload files (with a progress bar)"), ("list", "list documents and status")):
        action = actions.add_parser(name, help=help_text)
        if name == "add":
            action.add_argument("paths", nargs="+", type=Path, metavar="PATH")
        where = action.add_mutually_exclusive_group()
        where.add_argument("--context", metavar="TYPE:ID", help="organization:ID, folder:ID or usecase:ID")
        where.add_argument("--session", metavar="ID", help="a conversation id")
    contexts = commands.add_parser("contexts", help="create or rename organizations, folders and usecases")
    context_actions = contexts.add_subparsers(dest="action", required=True)
    put = context_actions.add_parser("put", help="create or rename a context")
    put.add_argument("type", choices=["organization", "folder", "usecase"])
    put.add_argument("id")
    put.add_argument("--name", help="display name (default: the id)")
    put.add_argument("--parent", metavar="ID", help="the folder of a usecase (a folder's parent is the organization)")


async def run_docs(settings: Settings, args: argparse.Namespace) -> int:
    """``orc docs add|list``."""
    target = Target.parse(args.context, args.session)
    async with build_runtime(settings) as services:
        if args.action == "add":
            return await add_documents(services.documents, target, args.paths, sys.stderr)
        return await list_documents(services.documents, target, sys.stdout)


async def run_contexts(settings: Settings, args: argparse.Namespace) -> int:
    """``orc contexts put``."""
    async with build_runtime(settings) as services:
        ref = ContextRef.parse(args.type, args.id)
        print(await put_context(services.documents, ref, args.name, args.parent))
    return 0


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``orc`` command."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "mcp":
        return _run_mcp(args)
    try:
        settings = Settings()
        console = Console()
        if args.command == "demo":
            return event_loop.run(run_demo(settings, console))
        if args.command == "ask":
            missing = [str(path) for path in args.files if not path.is_file()]
            if missing:
                print(f"error: no such file: {', '.join(missing)}", file=sys.stderr)
                return 2
            return event_loop.run(run_ask(settings, console, args.question, args.files, args.conversation))
        if args.command == "docs":
            missing = [str(path) for path in getattr(args, "paths", []) if not path.is_file()]
            if missing:
                print(f"error: no such file: {', '.join(missing)}", file=sys.stderr)
                return 2
            return event_loop.run(run_docs(settings, args))
        if args.command == "contexts":
            return event_loop.run(run_contexts(settings, args))
        if args.command == "sessions":
            return event_loop.run(run_sessions(settings, args, console))
        from orc.http import create_app
        from orc.http.serving import APP_FACTORY, serve

        # Several workers each build the app from the same ORC_ environment that made `settings`.
        app = create_app(settings) if args.workers == 1 else APP_FACTORY
        serve(app, host=args.host, port=args.port, workers=args.workers, log_level=args.log_level.lower())
        return 0
    except InternalError:
        raise
    except OrcError as exc:
        print(f"error ({exc.code}): {exc.message}", file=sys.stderr)
        if exc.code == "context_not_found":
            print("hint: create it first with: orc contexts put TYPE ID [--parent FOLDER]", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
