"""When a turn asks for context instead of answering (issue 29 §1): the needs analyzer's one threshold, measured.

The analyzer (``orc.graph.context_needs``) asks when no span of the first evidence covers at least
``MIN_COVERAGE`` of the question's content words. On the project's real-document sets — ``bench/real_documents``
(``questions.json`` and ``held_out.json``, a folder context), ``bench/real_documents_blind/blind.jsonl``, and two sets
written after the threshold was chosen, ``real_documents_blind/held_out.jsonl`` and
``real_documents/paraphrased.jsonl`` (documents attached to each conversation) — every question is asked as a
real turn with ``"context_requests": "allow"`` (a follow-up's first question without), and the bench counts:

- answerable questions **paused** (target ≤ 5 %): each is a user asked for something the documents held;
- unanswerable questions that **ask** for context, and those that **decline** (the rest answered wrongly).

``--sweep`` also prints, for other thresholds, what the same decision would give, from the coverage of the
turn's first evidence re-computed by a ``documents.search`` of the question in the same scope (the offline
planner's first round), so the chosen value can be read against its neighbours.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import BenchResult, Check, bench_settings, temporary_home
from bench.documents_common import exit_with, standalone
from bench.offline_answers import FOLDER, QUESTION_SETS, ingest, load_questions
from orc.composition import Services, build_runtime
from orc.conversations.models import FocusContext
from orc.documents.catalog.availability import DocumentScope
from orc.documents.intake.uploads import Upload
from orc.evaluation.cases import load_cases
from orc.graph.context_needs import MIN_COVERAGE, coverage
from orc.models.declines import is_decline
from orc.principal import LOCAL_PRINCIPAL
from orc.turns import TurnRequest, TurnResult

HERE = Path(__file__).resolve().parent
CASE_SETS = {
    "blind": HERE / "real_documents_blind" / "blind.jsonl",
    "blind_held_out": HERE / "real_documents_blind" / "held_out.jsonl",
    "paraphrased": HERE / "real_documents" / "paraphrased.jsonl",
}
"""Sets of cases with their documents attached; the last two were written after the threshold was chosen."""
LABELS = ("questions", "held_out", *CASE_SETS, "all")
SWEEP = (0.2, 0.25, 0.3, 0.34, 0.4, 0.5, 0.6)
SEARCH_LIMIT = 8
PAUSED_TARGET = 5.0


@dataclass(frozen=True)
class Decision:
    """What one scored question got: paused, or answered (declining or not), and its first evidence's coverage."""

    set: str
    question: str
    answerable: bool
    paused: bool
    declined: bool
    coverage: float


async def _folder_set(services: Services, name: str) -> list[Decision]:
    context = FocusContext(type=FOLDER.type, id=FOLDER.id)
    decisions = []
    for question in load_questions(name):
        conversation_id = None
        if question.follows:
            first = await services.orchestrator.ask(TurnRequest(question=question.follows, context=context))
            assert isinstance(first, TurnResult)
            conversation_id = first.conversation_id
        result = await services.orchestrator.ask(
            TurnRequest(
                question=question.text, context=context, conversation_id=conversation_id, context_requests="allow"
            )
        )
        scope = DocumentScope(session_id=result.conversation_id, focus=FOLDER)
        hits = await services.documents.library.search(LOCAL_PRINCIPAL, scope, question.text, limit=SEARCH_LIMIT)
        decisions.append(
            _decision(name.removesuffix(".json"), question.text, question.expect is not None, result, hits)
        )
    return decisions


async def _case_set(services: Services, label: str, path: Path) -> list[Decision]:
    folder = path.parent / "documents"
    cases = load_cases(path, folder)
    data: dict[str, bytes] = {}
    decisions = []
    for number, case in enumerate(cases):
        conversation_id = f"needs-{label}-{number}"
        for name in case.docs:
            data.setdefault(name, await asyncio.to_thread((folder / name).read_bytes))
        await services.foundation.session_files.add(
            LOCAL_PRINCIPAL, conversation_id, [Upload(name, data[name]) for name in case.docs], wait_seconds=600
        )
        result: Any = None
        for index, turn in enumerate(case.conversation):
            last = index == len(case.conversation) - 1
            result = await services.orchestrator.ask(
                TurnRequest(
                    question=turn.question,
                    conversation_id=conversation_id,
                    blob_names=list(case.docs),
                    context_requests="allow" if last else "never",
                )
            )
        hits = await services.documents.library.search(
            LOCAL_PRINCIPAL, DocumentScope(session_id=conversation_id), case.scored.question, limit=SEARCH_LIMIT
        )
        decisions.append(_decision(label, case.scored.question, case.answerable, result, hits))
    return decisions


def _decision(name: str, question: str, answerable: bool, result: Any, hits: Any) -> Decision:
    paused = not isinstance(result, TurnResult)
    return Decision(
        set=name,
        question=question,
        answerable=answerable,
        paused=paused,
        declined=not paused and is_decline(result.answer),
        coverage=coverage(question, hits.results),
    )


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.0%})" if whole else "0/0"


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--sweep", action="store_true", help="also print the decision at other thresholds")
    parser.add_argument("--show", action="store_true", help="print every paused answerable question")


async def run(args: argparse.Namespace) -> BenchResult:
    """Ask every set's questions as turns that may pause, and count the decisions."""
    decisions: list[Decision] = []
    with temporary_home() as home:
        async with build_runtime(bench_settings(home, context_request_timeout=3600)) as services:
            await ingest(services)
            for name in QUESTION_SETS:
                decisions += await _folder_set(services, name)
            for label, path in CASE_SETS.items():
                decisions += await _case_set(services, label, path)
    result = BenchResult(name="handoff_needs")
    result.details["threshold"] = MIN_COVERAGE
    for label in LABELS:
        chosen = [d for d in decisions if label in ("all", d.set)]
        answerable = [d for d in chosen if d.answerable]
        unanswerable = [d for d in chosen if not d.answerable]
        paused = sum(d.paused for d in answerable)
        result.rows.append(
            {
                "set": label,
                "answerable paused": _share(paused, len(answerable)),
                "unanswerable asking": _share(sum(d.paused for d in unanswerable), len(unanswerable)),
                "unanswerable declining": _share(sum(d.declined for d in unanswerable), len(unanswerable)),
            }
        )
        if label == "all" and answerable:
            result.checks.append(
                Check("answerable questions paused", round(paused / len(answerable) * 100, 1), PAUSED_TARGET, "%")
            )
    if args.show:
        for d in decisions:
            if d.answerable and d.paused:
                print(f"paused [{d.set}] coverage {d.coverage:.2f}: {d.question}")
    if args.sweep:
        sweep: dict[str, dict[str, str]] = {}
        for threshold in SWEEP:
            for label in LABELS:
                chosen = [d for d in decisions if label in ("all", d.set)]
                answerable = [d for d in chosen if d.answerable]
                unanswerable = [d for d in chosen if not d.answerable]
                sweep.setdefault(str(threshold), {})[label] = (
                    f"answerable paused {_share(sum(d.coverage < threshold for d in answerable), len(answerable))}, "
                    f"unanswerable asking "
                    f"{_share(sum(d.coverage < threshold for d in unanswerable), len(unanswerable))}"
                )
        result.details["sweep (search coverage)"] = sweep
        print(json.dumps(sweep, indent=1))
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
