"""The cases ``bench.offline_decision`` fits the offline model's answer-or-decline decision on: every question of
the spent ``bench/trust_documents`` sets, asked through the whole turn as ``bench.offline_trust`` asks it, and of
``bench.offline_answers``' sets, asked as it asks them, recorded where the offline model answers — the standalone
question and the spans retrieval gave it — with the phrase the answer must quote (none for an unanswerable
question). A set still blind is recorded only when named (``--set blind_7 --output FILE``), into a file of its own
that ``bench.offline_decision --score FILE`` scores once, printing its figures and no case.

``python -m bench.offline_decision_cases`` writes them to ``orc-offline-decision-cases.json`` in the temporary
folder (about 12 MB, so not kept in the repository): the fit reads that file, so trying a feature or a threshold
does not ask seven hundred turns again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import offline_answers, offline_trust
from bench.common import bench_settings, temporary_home
from bench.offline_trust import HERE, run_case
from orc.composition import build_runtime
from orc.evaluation.cases import load_cases
from orc.models.declines import is_decline
from orc.models.offline import OfflineExtractiveModel
from orc.models.passages import Source

SPENT_SETS = ("blind", "dev", "held_out", "blind_2", "blind_3", "blind_4", "blind_5", "blind_6")
"""Every set scored after its round (tuned on since). A set still blind is never listed here: its cases must not
reach the fit."""
REAL_SETS = ("real_documents/questions.json", "real_documents/paraphrased.jsonl", "real_documents/held_out.json")
"""``bench.offline_answers``'s sets: nearer the documents' words, over ten licences and specifications."""
CASES = Path(tempfile.gettempdir()) / "orc-offline-decision-cases.json"

_asked: list[tuple[str, list[Source]]] = []


class _RecordingModel(OfflineExtractiveModel):
    """The offline model, noting each question it answers and the sources it answers from."""

    def answer(self, question: str, sources: Sequence[Source]) -> str:
        _asked.append((question, list(sources)))
        return super().answer(question, sources)


@dataclass
class Case:
    """One recorded question: where it comes from, what it must quote, and what the model was given."""

    set: str
    id: str
    document: str | None
    expect: str | None
    question: str
    sources: list[dict[str, Any]]
    right: bool
    declined: bool
    points_to_answer: bool


async def record(name: str) -> list[Case]:
    """Ask every case of set ``name`` and record its last answer request."""
    folder = HERE / name
    recorded = []
    with temporary_home() as home:
        async with build_runtime(bench_settings(home), model=_RecordingModel()) as services:
            for case in load_cases(HERE / f"{name}.jsonl", folder):
                _asked.clear()
                outcome = await run_case(services, case, folder)
                if not _asked:
                    # Small talk, a summary, a listing: the decision did not run.
                    continue
                question, sources = _asked[-1]
                recorded.append(
                    Case(
                        set=name,
                        id=case.id,
                        document=case.docs[0],
                        expect=case.scored.expect,
                        question=question,
                        sources=[asdict(source) for source in sources],
                        right=outcome.right,
                        declined=outcome.declined,
                        points_to_answer=outcome.points_to_answer,
                    )
                )
    return recorded


def load(path: Path = CASES) -> list[Case]:
    """The recorded cases."""
    return [Case(**item) for item in json.loads(path.read_text())]


def sources_of(case: Case) -> list[Source]:
    """The spans ``case``'s answer request was given."""
    return [Source(**item) for item in case.sources]


async def record_real(name: str) -> list[Case]:
    """Ask every question of ``bench/real_documents/<name>`` as ``bench.offline_answers`` does (one folder of ten
    documents) and record its last answer request."""
    recorded = []
    with temporary_home() as home:
        async with build_runtime(bench_settings(home), model=_RecordingModel()) as services:
            await offline_answers.ingest(services)
            for number, question in enumerate(offline_answers.load_questions(name)):
                _asked.clear()
                result = await offline_answers.ask(services, question)
                if not _asked:
                    continue
                outcome = offline_answers.judge(question, result)
                asked, sources = _asked[-1]
                declined = is_decline(result.answer) and not result.citations
                recorded.append(
                    Case(
                        set=f"real_documents/{name}",
                        id=str(number),
                        document=question.target,
                        expect=question.expect,
                        question=asked,
                        sources=[asdict(source) for source in sources],
                        right=question.expect is not None and outcome.passed,
                        declined=declined,
                        points_to_answer=False,
                    )
                )
    return recorded


async def _record_all(sets: Sequence[str]) -> list[Case]:
    cases = []
    for name in sets:
        found = await (record_real(name.split("/", 1)[1]) if name.startswith("real_documents/") else record(name))
        print(f"{name}: {len(found)} cases recorded", flush=True)
        cases += found
    return cases


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--set", dest="sets", action="append", choices=offline_trust.SETS + REAL_SETS)
    parser.add_argument("--output", type=Path, default=CASES)
    arguments = parser.parse_args()
    recorded = asyncio.run(_record_all(arguments.sets or SPENT_SETS + REAL_SETS))
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    arguments.output.write_text(json.dumps([asdict(case) for case in recorded]))
