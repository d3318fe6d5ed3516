"""``orc eval QUESTIONS.jsonl --docs DIR``: run a question set as real turns and score the answers.

Each case attaches its documents to a new conversation and asks its question(s) through the same turn pipeline
``orc ask`` and the HTTP API use, with the configured model (or ``--model``). The run keeps its data in a
temporary folder: it never touches ``ORC_HOME``, so it can be run against a production configuration's model
without writing to its storage. It prints each case as it finishes and the totals, and writes them as JSON and
Markdown (the format and the measures: :mod:`orc.evaluation`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from orc.cli.refusals import error_line

if TYPE_CHECKING:  # `orc --help` builds this command's parser and must not load the settings machinery
    from orc.settings import Settings


def add_eval_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``eval`` subcommand."""
    command = commands.add_parser(
        "eval",
        help="run a question set (JSON Lines) as real turns and score the answers",
        description="Run a question set as real turns against the configured model and score the answers: "
        "answer hits by expected phrase, citation precision, declines on unanswerable questions, retrieval "
        "recall@5/@8, source recall (whether the sources the model was sent hold the expected phrase) and the "
        "sources' tokens per turn, latency and tokens. Writes PREFIX.json and PREFIX.md.",
    )
    command.add_argument("questions", type=Path, metavar="QUESTIONS.jsonl")
    command.add_argument("--docs", type=Path, required=True, metavar="DIR", help="the folder holding the cases' docs")
    command.add_argument(
        "--model",
        type=_spec("a model", "offline"),
        help="answer with this model (offline, openai:<model>, azure:<deployment>); default: ORC_MODEL",
    )
    command.add_argument(
        "--embeddings",
        type=_spec("an embeddings model", "off"),
        help="retrieve with these embeddings (off, openai:<model>, azure:<deployment>); default: ORC_EMBEDDINGS",
    )
    command.add_argument(
        "--out", type=Path, metavar="PREFIX", help="write PREFIX.json and PREFIX.md (default: eval-<set name>)"
    )


def _spec(what: str, local: str) -> Any:
    """An argparse type for ``--model`` / ``--embeddings``: a spec is refused as the option the user typed, before
    any case runs (the settings would name ORC_MODEL, which the user did not set)."""

    def check(text: str) -> str:
        kind, _, name = text.strip().partition(":")
        if (kind.lower() == local and not name) or (kind.lower() in ("openai", "azure") and name.strip()):
            return text
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}: use {local}, openai:<model> or azure:<deployment>")

    return check


def eval_settings(settings: Settings, home: Path, args: argparse.Namespace) -> Settings:
    """``settings`` with the run's own embedded storage, and the model and embeddings the command names."""
    from orc.settings import Settings

    overrides: dict[str, Any] = {"home": home, "storage": "embedded", "jobs": "inprocess"}
    if args.model:
        overrides["model"] = args.model
    if args.embeddings:
        overrides["embeddings"] = args.embeddings
    return Settings(**{**settings.model_dump(exclude_unset=True), **overrides})


async def run_eval(
    settings: Settings, args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the set and report; 2 when the set or the folder is unusable."""
    out = out or sys.stdout
    err = err or sys.stderr
    from contextlib import AsyncExitStack

    from orc.composition import build_runtime, model_from_settings
    from orc.errors import InvalidInput
    from orc.evaluation import load_cases, summarize, to_markdown
    from orc.evaluation.report import summary_lines
    from orc.evaluation.runner import run_cases
    from orc.evaluation.scoring import CaseOutcome
    from orc.evaluation.sources import AnswerRequests
    from orc.models.factory import model_label
    from orc.models.tokens import token_counter_for

    if not args.questions.is_file():
        print(error_line("file_not_found", f"no such file: {args.questions}"), file=err)
        return 2
    if not args.docs.is_dir():
        print(error_line("folder_not_found", f"no such folder: {args.docs}"), file=err)
        return 2
    try:
        cases = load_cases(args.questions, args.docs, max_upload_bytes=settings.max_upload_bytes)
    except InvalidInput as exc:
        first, *rest = exc.message.splitlines()
        print(f"error ({exc.code}): {first}", *(f"  {line}" for line in rest), sep="\n", file=err)
        return 2
    name = args.questions.stem
    prefix: Path = args.out or Path(f"eval-{name}")

    def progress(number: int, outcome: CaseOutcome) -> None:
        verdict = "error" if outcome.error else ("pass" if outcome.passed else "miss")
        detail = f"  {outcome.error}" if outcome.error else ""
        print(f"  [{number}/{len(cases)}] {outcome.id}: {verdict} ({outcome.latency_ms:.0f} ms){detail}", file=err)

    with tempfile.TemporaryDirectory(prefix="orc-eval-") as home:
        run_settings = eval_settings(settings, Path(home), args)
        embeddings = getattr(run_settings, "embeddings", None)
        print(f"orc eval: {len(cases)} cases from {args.questions} with model {run_settings.model}", file=err)
        async with AsyncExitStack() as stack:
            # The configured model, with a recorder of what each answer request sends it (source recall).
            model = model_from_settings(run_settings, resources=stack)
            requests = AnswerRequests(token_counter_for(model_label(model)))
            model.callbacks = [requests]
            services = await stack.enter_async_context(build_runtime(run_settings, model=model))
            outcomes = await run_cases(services, cases, args.docs, progress=progress, requests=requests)
    report = summarize(name, run_settings.model, outcomes, embeddings=str(embeddings) if embeddings else None)
    width = max(len(measure) for measure, _ in summary_lines(report))
    for measure, value in summary_lines(report):
        print(f"{measure.ljust(width)}  {value}", file=out)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    json_path, markdown_path = prefix.with_name(prefix.name + ".json"), prefix.with_name(prefix.name + ".md")
    json_path.write_text(report.model_dump_json(indent=1) + "\n", encoding="utf-8")
    markdown_path.write_text(to_markdown(report), encoding="utf-8")
    print(f"wrote {json_path} and {markdown_path}", file=err)
    return 0
