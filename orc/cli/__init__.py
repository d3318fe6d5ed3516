"""The ``orc`` command: ``demo``, ``ask``, ``chat``, ``docs``, ``contexts``, ``sessions``, ``serve``, ``mcp``,
``worker``, ``eval`` and ``doctor``.

It acts as the embedded local principal. This module only parses arguments: what a command does lives in
:mod:`orc.cli.commands`, :mod:`orc.cli.stored` and :mod:`orc.cli.chat`, imported once the command is known, so
``orc --help`` and a mistyped argument answer without loading LangGraph, MCP, the model clients or the storage
backends, and a command that only reads what is stored (:mod:`orc.cli.stored`) without the turn machinery.
"""

from __future__ import annotations

import argparse
import errno
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orc.cli.doctor import add_doctor_command
from orc.cli.eval import add_eval_command
from orc.cli.refusals import error_line
from orc.cli.worker import add_worker_command

if TYPE_CHECKING:  # imported where it is raised: `orc --help` stays light
    from orc.errors import OrcError

CONTEXT_HELP = "focus on a context: organization:ID, folder:ID or usecase:ID"
QUIET_LOGGERS = ("aiosqlite", "sqlite3", "httpcore", "httpx", "openai", "azure", "urllib3", "asyncio", "mcp")
"""Third-party loggers kept at INFO under ``--log-level DEBUG``: aiosqlite logs every SQL statement with its
parameters (whole document texts), and the HTTP clients log every header."""


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
    ask.add_argument("--context", metavar="TYPE:ID", help=CONTEXT_HELP)
    chat = commands.add_parser("chat", help="an interactive conversation (/attach PATH, /context TYPE:ID, /new, /quit)")
    chat.add_argument("--conversation", metavar="ID", help="continue this conversation")
    serve = commands.add_parser("serve", help="run the HTTP API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="worker processes (1). More use more cores; each keeps its own document_chat file cache",
    )
    serve.add_argument(
        "--http",
        choices=("auto", "httptools", "h11"),
        default="auto",
        help="the HTTP parser (auto: httptools where it is installed, else h11); both bound request heads",
    )
    _add_mcp_commands(commands)
    _add_document_commands(commands)
    _add_session_commands(commands)
    add_worker_command(commands)
    add_eval_command(commands)
    add_doctor_command(commands)
    return parser


def _add_mcp_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``orc mcp`` (serve over stdio) and ``orc mcp install claude|vscode|cursor``."""
    from orc.cli.mcp import add_client_options

    def principal_and_client_options(parser: argparse.ArgumentParser, *, inherit: bool = False) -> None:
        # inherit: `orc mcp --user bob install claude` keeps bob (a subparser's defaults would overwrite it).
        unset: dict[str, Any] = {"default": argparse.SUPPRESS} if inherit else {}
        parser.add_argument("--organization", **(unset or {"default": "default"}))
        parser.add_argument("--user", **(unset or {"default": "default"}))
        add_client_options(parser, inherit=inherit)

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
        from orc.cli.refusals import settings_from_environment

        launch = mcp_install.ServerLaunch(
            python=Path(sys.executable),
            orc_home=settings_from_environment().home,
            organization=args.organization,
            user=args.user,
            allow_dirs=args.allow_dirs,
            tool_names=args.tool_names,
            name=args.name,
        )
        return mcp_install.run(args.client, launch, print_only=args.print_only, config=args.config)
    from orc.cli.mcp import main as mcp_main

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
    export.add_argument(
        "--output", "-o", type=Path, metavar="PATH", help="write here (default: stdout; pdf: ID.pdf in this folder)"
    )


def _add_document_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    docs = commands.add_parser("docs", help="add, list or remove documents of a context or a session")
    actions = docs.add_subparsers(dest="action", required=True)
    for name, help_text in (
        ("add", "upload files (with a progress bar)"),
        ("list", "list documents and status (no flag: every context and session)"),
        ("remove", "remove a document by its id or filename"),
    ):
        action = actions.add_parser(name, help=help_text)
        if name == "add":
            action.add_argument("paths", nargs="+", type=Path, metavar="PATH")
        if name == "remove":
            action.add_argument("document", metavar="ID_OR_FILENAME")
        where = action.add_mutually_exclusive_group()
        where.add_argument("--context", metavar="TYPE:ID", help="organization:ID, folder:ID or usecase:ID")
        where.add_argument("--session", metavar="ID", help="a conversation id")
    contexts = commands.add_parser("contexts", help="create, rename or list organizations, folders and usecases")
    context_actions = contexts.add_subparsers(dest="action", required=True)
    put = context_actions.add_parser("put", help="create or rename a context")
    put.add_argument("type", choices=["organization", "folder", "usecase"])
    put.add_argument("id")
    put.add_argument("--name", help="display name (default: the id)")
    put.add_argument("--parent", metavar="ID", help="the folder of a usecase (a folder's parent is the organization)")
    context_actions.add_parser("list", help="the context tree of your organization")


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def configure_logging(level: str) -> None:
    """``level`` for orc; third-party loggers no chattier than INFO (see :data:`QUIET_LOGGERS`)."""
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    if level == "DEBUG":
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``orc`` command."""
    args = build_parser().parse_args(argv)
    configure_logging(args.log_level)
    from orc.errors import InternalError, OrcError

    if args.command == "mcp":
        try:
            return _run_mcp(args)
        except InternalError:
            raise
        except OrcError as exc:
            return _refused(exc, args)
    named = [*getattr(args, "files", []), *getattr(args, "paths", [])]
    folders = [str(path) for path in named if path.is_dir()]
    if folders:
        # A folder is not "no such file": say what to type instead (the shell expands the pattern).
        example = str(Path(folders[0]) / "*")
        message = f"{', '.join(folders)}: a folder, not a file; name its files (for example {example})"
        print(error_line("not_a_file", message), file=sys.stderr)
        return 2
    missing = [str(path) for path in named if not path.is_file()]
    if missing:
        print(error_line("file_not_found", f"no such file: {', '.join(missing)}"), file=sys.stderr)
        return 2
    try:
        return _run(args)
    except InternalError:
        raise
    except OrcError as exc:
        return _refused(exc, args)


def _refused(exc: OrcError, args: argparse.Namespace) -> int:
    """Say a refusal in one line (and a hint where one helps); exit status 1."""
    print(error_line(exc.code, exc.message), file=sys.stderr)
    hint = _HINTS.get(exc.code) if args.command != "contexts" or exc.code == "invalid_parent" else None
    if hint:
        print(f"hint: {hint}", file=sys.stderr)
    return 1


_HINTS = {
    # Not after `orc contexts put` itself: "create it first with the command you just ran" helps no one.
    "context_not_found": "create it first with: orc contexts put TYPE ID [--parent FOLDER]",
    # The service speaks of the API's parent_id; on the command line it is --parent.
    "invalid_parent": "a folder's parent is the organization; a usecase's is a folder: "
    "orc contexts put usecase ID --parent FOLDER",
}


def _run(args: argparse.Namespace) -> int:
    from orc import event_loop
    from orc.cli.console import NOTHING_YET
    from orc.cli.refusals import settings_from_environment

    settings = settings_from_environment()
    empty = NOTHING_YET.get((args.command, getattr(args, "action", None)))
    # Embedded stores live in ORC_HOME: without the folder nothing is stored yet, and opening them would create it.
    if empty is not None and settings.storage == "embedded" and not settings.home.is_dir():
        print(empty)
        return 0
    if args.command == "chat":
        from orc.cli.chat import run_chat
        from orc.cli.console import Console

        return event_loop.run(run_chat(settings, Console(model=settings.model), sys.stdin, args.conversation))
    from orc.cli import stored
    from orc.cli.console import Console

    console = Console(model=settings.model)
    if stored.handles(args):
        return event_loop.run(stored.run(settings, args, console))
    if args.command in ("demo", "ask", "docs", "sessions"):
        from orc.cli import commands

        if args.command == "demo":
            return event_loop.run(commands.run_demo(settings, console))
        if args.command == "ask":
            return event_loop.run(commands.run_ask(settings, console, args))
        if args.command == "docs":
            return event_loop.run(commands.run_docs(settings, args, console))
        return event_loop.run(commands.delete_session(settings, args.id, console))
    if args.command == "eval":
        from orc.cli.eval import run_eval

        return event_loop.run(run_eval(settings, args))
    if args.command == "doctor":
        from orc.cli.doctor import run_doctor

        return event_loop.run(run_doctor(settings))
    if args.command == "worker":
        from orc.cli.worker import run_worker

        return event_loop.run(run_worker(settings, args.concurrency))
    from orc.http import create_app
    from orc.http.serving import APP_FACTORY, listening_url, serve

    # Several workers each build the app from the same ORC_ environment that made `settings`.
    app = create_app(settings) if args.workers == 1 else APP_FACTORY
    try:
        serve(
            app, host=args.host, port=args.port, workers=args.workers, log_level=args.log_level.lower(), http=args.http
        )
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        taken = f"{listening_url(args.host, args.port)} is taken, perhaps by another orc serve"
        print(error_line("address_in_use", f"{taken}; stop it, or serve on another port with --port"), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
