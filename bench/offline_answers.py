"""The offline model on real documents (issue 17 §1): how often it cites the sentence that answers the question.

The set is ``bench/real_documents/``: ten documents orc's authors did not write (license texts from Debian's
``common-licenses``, Python's and pip's licenses, and the 17-page Shared MIME-info specification as a PDF) and
``questions.json``. The documents go into a folder context, as ``orc docs add --context folder:eval`` puts them;
each question starts a new conversation focused on that folder (a follow-up asks its first question before it,
in the same conversation), through the whole turn: planning, ``documents.search``, the answer and citations.

Scored per question:

- answerable (``expect`` is a phrase): passes when a citation's quote holds the phrase, and passes *from one place*
  when, besides, every citation is of the span holding it (an answer of three sentences from three places, one of
  which holds the phrase, passes only the first check);
- unanswerable (``expect`` is null): passes when the answer declines and cites nothing;
- every answer: no quote may be a fragment (it must read as a whole sentence) and no answer may be a heading.

``--set paraphrased.jsonl`` scores the set written in users' own words (JSON Lines in the ``orc eval`` format),
and every set also reports ``documents.search`` recall@5 and the follow-ups answered.

Targets: ≥ 80 % of the answerable questions, every unanswerable one declined, no fragment; the offline
model's own answer ≤ 20 ms with sources from 10 documents (timed apart from the turn, on the prompts the turns
built).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import Field

from bench.common import BenchResult, Check, bench_settings, percentile, summarize, temporary_home
from bench.documents_common import exit_with, standalone
from orc.composition import Services, build_runtime
from orc.conversations.models import FocusContext
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.models.answering import NOT_FOUND
from orc.models.offline import OfflineExtractiveModel
from orc.principal import LOCAL_PRINCIPAL
from orc.turns import TurnRequest, TurnResult

SET = Path(__file__).resolve().parent / "real_documents"
FOLDER = ContextRef("folder", "eval")
ANSWER_MS_TARGET = 20.0
PROCESSING_SECONDS = 120.0

# A quote reads as a whole sentence when it starts like one (a list item's marker may come first: "(b) You
# must…", "a. No trademark…") and ends with closing punctuation or as a list item does ("…; and").
_SENTENCE_START = re.compile(r"^(?:\(?[a-z0-9]{1,3}[.)]\s+)?[\"'“‘(\[]?[A-Z0-9•*-]")
_SENTENCE_END = re.compile(r"(?:[.!?:;)\"'”’]|;\s+(?:and|or))$")


@dataclass(frozen=True)
class Question:
    """One question of the set, with the phrase its answer must quote (None: the documents cannot answer)."""

    text: str
    expect: str | None
    follows: str | None = None
    target: str | None = None
    """The document that answers (``orc eval`` sets name it; None when unknown or unanswerable)."""


@dataclass
class Outcome:
    """What one question got."""

    question: Question
    answer: str
    quotes: list[str]
    passed: bool
    fragments: list[str] = field(default_factory=list)
    retrieved: bool | None = None
    strict: bool = False
    """Passed, and every citation is of the span whose quote holds the phrase: the answer is that passage, not
    sentences from several places of which one happens to hold the phrase."""
    """Whether the answer prompt's sources held the expected phrase (None for unanswerable questions)."""
    searched: bool | None = None
    """Whether ``documents.search``'s first results for the question held the expected phrase (None for
    unanswerable questions and follow-ups, whose question alone does not say what to look for)."""


QUESTION_SETS = ("questions.json", "held_out.json")
"""The tuning set, and the questions written after the tuning and scored without changing the answerer again."""
PARAPHRASED = "paraphrased.jsonl"
"""Questions in a user's own words over the same documents (``orc eval`` format; overlap 0.15), to develop on."""
SEARCH_DEPTH = 5
"""``documents.search`` recall is counted in this many first results."""


def load_questions(name: str = "questions.json") -> list[Question]:
    """The questions of ``bench/real_documents/<name>``: the set's own JSON, or JSON Lines in the ``orc eval``
    format (a follow-up case's ``turns`` become a question that follows another)."""
    text = (SET / name).read_text(encoding="utf-8")
    if name.endswith(".jsonl"):
        return [_eval_case(json.loads(line)) for line in text.splitlines() if line.strip()]
    data = json.loads(text)
    return [Question(item["q"], item["expect"], item.get("follows")) for item in data["questions"]]


def _eval_case(case: dict[str, Any]) -> Question:
    if "turns" in case:
        first, last = case["turns"][0], case["turns"][-1]
        return Question(last["question"], last.get("expect"), first["question"], case.get("target"))
    return Question(case["question"], case.get("expect"), None, case.get("target"))


def documents() -> list[Upload]:
    """The set's documents as uploads."""
    return [Upload(path.name, path.read_bytes()) for path in sorted((SET / "documents").iterdir())]


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def is_fragment(quote: str) -> bool:
    """Whether a quote does not read as a whole sentence (it starts mid-sentence or stops short)."""
    text = quote.strip()
    return not (_SENTENCE_START.match(text) and _SENTENCE_END.search(text))


def judge(question: Question, result: TurnResult, prompt: str = "") -> Outcome:
    """Score one answer (``prompt``: the answer request's system text, to tell retrieval misses apart)."""
    quotes = [citation.quote for citation in result.citations]
    fragments = [quote for quote in quotes if is_fragment(quote)]
    if question.expect is None:
        passed = not quotes and result.answer.startswith(NOT_FOUND)
    else:
        phrase = _normal(question.expect)
        passed = any(phrase in _normal(quote) for quote in quotes)
    retrieved = None if question.expect is None else _normal(question.expect) in _normal(html.unescape(prompt))
    strict = passed
    if question.expect is not None and passed:
        holding = {c.ref for c in result.citations if _normal(question.expect) in _normal(c.quote)}
        strict = all(citation.ref in holding for citation in result.citations)
    return Outcome(question, result.answer, quotes, passed and not fragments, fragments, retrieved, strict=strict)


async def ingest(services: Services) -> None:
    """Put the set's documents into the folder context and wait until each is processed."""
    await services.foundation.directory.put(LOCAL_PRINCIPAL, FOLDER, "Evaluation documents", None)
    added = await services.foundation.context_documents.add(
        LOCAL_PRINCIPAL, FOLDER, documents(), wait_seconds=PROCESSING_SECONDS
    )
    failed = [doc.record.filename for doc in added if doc.record.status != "ready"]
    if failed:
        raise RuntimeError(f"documents not ready after {PROCESSING_SECONDS:.0f} s: {failed}")


async def ask(services: Services, question: Question) -> TurnResult:
    """Ask ``question`` in a new conversation focused on the folder (after the question it follows, if any)."""
    context = FocusContext(type=FOLDER.type, id=FOLDER.id)
    conversation_id = None
    if question.follows:
        first = await services.orchestrator.ask(TurnRequest(question=question.follows, context=context))
        assert isinstance(first, TurnResult)
        conversation_id = first.conversation_id
    result = await services.orchestrator.ask(
        TurnRequest(question=question.text, context=context, conversation_id=conversation_id)
    )
    assert isinstance(result, TurnResult)
    return result


async def searched(services: Services, question: Question) -> bool:
    """Whether ``documents.search`` over the folder finds the span holding the expected phrase in its first
    :data:`SEARCH_DEPTH` results."""
    assert question.expect is not None
    scope = await services.foundation.scopes.resolve(LOCAL_PRINCIPAL, context_type=FOLDER.type, context_id=FOLDER.id)
    found = await services.documents.library.search(LOCAL_PRINCIPAL, scope, question.text, limit=SEARCH_DEPTH)
    phrase = _normal(question.expect)
    return any(phrase in _normal(hit.text) for hit in found.results)


class _Recording(OfflineExtractiveModel):
    """The offline model, keeping every answer prompt it was sent (to time its answering apart)."""

    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    def respond(self, messages: Any, **kwargs: Any) -> Any:
        if any("<sources>" in message.text for message in messages):
            self.prompts.append(list(messages))
        return super().respond(messages, **kwargs)


async def evaluate(home: Path, names: Sequence[str] = QUESTION_SETS) -> tuple[dict[str, list[Outcome]], list[float]]:
    """Run the question sets; return each set's outcomes and the offline model's answer times (ms)."""
    model = _Recording()
    outcomes: dict[str, list[Outcome]] = {}
    async with build_runtime(bench_settings(home), model=model) as services:
        await ingest(services)
        for name in names:
            outcomes[name] = []
            for question in load_questions(name):
                result = await ask(services, question)
                prompt = "\n".join(m.text for m in model.prompts[-1]) if model.prompts else ""
                outcome = judge(question, result, prompt)
                if question.expect is not None and question.follows is None:
                    outcome.searched = await searched(services, question)
                outcomes[name].append(outcome)
    plain = OfflineExtractiveModel()
    times = []
    for messages in model.prompts:
        start = time.perf_counter()
        plain.respond(messages)
        times.append((time.perf_counter() - start) * 1000)
    return outcomes, times


def report(outcomes: list[Outcome]) -> dict[str, Any]:
    """The scores of a run."""
    answerable = [o for o in outcomes if o.question.expect is not None]
    unanswerable = [o for o in outcomes if o.question.expect is None]
    return {
        "answerable": len(answerable),
        "answered": sum(o.passed for o in answerable),
        "answered_strict": sum(o.passed and o.strict for o in answerable),
        "unanswerable": len(unanswerable),
        "declined": sum(o.passed for o in unanswerable),
        "fragments": sum(len(o.fragments) for o in outcomes),
        "retrieved": sum(bool(o.retrieved) for o in answerable),
        "searchable": sum(o.searched is not None for o in answerable),
        "searched": sum(bool(o.searched) for o in answerable),
        "follow_ups": sum(o.question.follows is not None for o in answerable),
        "follow_ups_answered": sum(o.passed for o in answerable if o.question.follows is not None),
    }


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--show", action="store_true", help="print every answer, not only the misses")
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        help=f"a question set of bench/real_documents (repeatable; default: {', '.join(QUESTION_SETS)})",
    )


async def run(args: argparse.Namespace) -> BenchResult:
    """Run the sets once and score them."""
    with temporary_home() as home:
        sets, times = await evaluate(home, args.sets or QUESTION_SETS)
    result = BenchResult(name="offline_answers")
    for name, outcomes in sets.items():
        scores = report(outcomes)
        share = scores["answered"] / scores["answerable"]
        label = name.removesuffix(".jsonl").removesuffix(".json")
        result.rows.append(
            {
                "set": label,
                "answered": f"{scores['answered']}/{scores['answerable']} ({share:.0%})",
                "one place": f"{scores['answered_strict']}/{scores['answerable']}",
                "retrieved": f"{scores['retrieved']}/{scores['answerable']}",
                f"search@{SEARCH_DEPTH}": f"{scores['searched']}/{scores['searchable']}",
                "follow-ups": f"{scores['follow_ups_answered']}/{scores['follow_ups']}",
                "declined": f"{scores['declined']}/{scores['unanswerable']}",
                "fragments": scores["fragments"],
            }
        )
        result.checks.append(
            Check(f"{label}: answerable questions missed", round((1 - share) * 100, 1), 20.0, unit="%")
        )
        result.checks.append(
            Check(
                f"{label}: unanswerable questions answered",
                float(scores["unanswerable"] - scores["declined"]),
                0.0,
                unit="questions",
            )
        )
        result.checks.append(Check(f"{label}: fragment quotes", float(scores["fragments"]), 0.0, unit="quotes"))
        result.details[label] = scores
        shown = outcomes if args.show else [o for o in outcomes if not o.passed]
        result.details[f"{label}_answers"] = [
            {"question": o.question.text, "passed": o.passed, "answer": o.answer, "quotes": o.quotes} for o in shown
        ]
        for o in shown:
            mark = "ok  " if o.passed else "MISS" if o.retrieved is not False else "MISS (not retrieved)"
            fragments = f"\n     fragments: {o.fragments}" if o.fragments else ""
            print(f"{mark} [{label}] {o.question.text}\n     -> {o.answer[:300]}{fragments}")
    timing = summarize(times)
    result.details["answer_ms"] = timing
    result.checks.append(Check("offline answer, 10 documents (p95)", round(percentile(times, 95), 2), ANSWER_MS_TARGET))
    print(f"offline answer time over {len(times)} prompts (ms): {timing}")
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
