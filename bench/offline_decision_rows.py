"""What the offline answerer importable here makes of each recorded case (``bench.offline_decision_cases``): its
own rules' outcome, and the features and label of the sentence a learned decision would weigh.

It reads only what every version of the answerer since ``blind_3`` was written has (``read_question``, ``weights``,
the passages, ``candidates``, BM25's ``rank``), so ``bench.offline_decision --history`` can run it under the code
of an older commit (``PYTHONPATH`` pointing at that commit's ``orc/``) and score a learned decision on each blind
set with the evidence of the day that set was blind, not the evidence tuned on it since.

``python -m bench.offline_decision_rows CASES SETS OUTPUT`` (``SETS`` comma-separated) writes the rows as JSON.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orc.evaluation.scoring import normal
from orc.models import answering, evidence
from orc.models.passages import Passage, Source, passages
from orc.models.questions import Expect
from orc.text import rank

FEATURES = (
    "evidence",
    "coverage",
    "margin",
    "span_rank",
    "retrieval",
    "faq_reply",
    "rivals",
    "asks_value",
    "asks_how_why",
    "asks_definition",
    "full",
    "strong",
)
"""What the decision reads of the candidate sentence (the first the answerer ranks with evidence above its floor):

- ``evidence``: its evidence as a share of the most the question allows (yes/no questions allow less);
- ``coverage``: the share of the question's words it covers before the evidence is lowered for what it cannot
  state (no number for "how many", no default for "what is the default…");
- ``margin``: how far its score leads the best-scored sentence that is not part of the same answer (≤ 0.5);
- ``span_rank``: log(1 + the rank retrieval gave its span);
- ``retrieval``: its own BM25 score as a share of the best sentence's;
- ``faq_reply``: it opens an FAQ's answer;
- ``rivals``: log(1 + the sentences elsewhere scoring within 0.1 of it);
- ``asks_value``, ``asks_how_why``, ``asks_definition``: what the question asks for;
- ``full``: it covers the whole question; ``strong``: how far its evidence share passes 0.8.
"""

MAX_MARGIN = 0.5
RIVAL_WINDOW = 0.1
STRONG = 0.8
_VALUES = frozenset({Expect.QUANTITY, Expect.DURATION, Expect.TIME, Expect.VALUE, Expect.PLACE, Expect.HOLDER})
_HOW_WHY = frozenset({Expect.METHOD, Expect.REASON})
_YES_NO = frozenset({Expect.YES_NO, Expect.PERMISSION})


@dataclass(frozen=True)
class Weighed:
    """A candidate sentence as the decision sees it."""

    passage: Passage
    evidence: float
    score: float
    coverage: float
    retrieval: float

    @property
    def asked(self) -> str:
        # Older answerers had no FAQ questions on their passages.
        return str(getattr(self.passage, "asked", ""))


def _same_answer(one: Weighed, other: Weighed) -> bool:
    """Neighbours in a span, or sentences of one FAQ answer: parts of one answer, not rivals."""
    if one.passage.source != other.passage.source:
        return False
    return abs(one.passage.position - other.passage.position) == 1 or bool(one.asked and one.asked == other.asked)


def features(question: Any, ranked: Sequence[Weighed], index: int, sources: Sequence[Source]) -> list[float]:
    """The :data:`FEATURES` of ``ranked[index]``."""
    best = ranked[index]
    expect = question.shape.expect
    share = best.evidence / (evidence.YES_NO_FACTOR if expect in _YES_NO else 1.0)
    others = [other for other in ranked if other is not best and not _same_answer(other, best)]
    span_rank = next((order for order, source in enumerate(sources) if source == best.passage.source), len(sources))
    return [
        share,
        best.coverage,
        min(best.score - others[0].score, MAX_MARGIN) if others else MAX_MARGIN,
        math.log1p(span_rank),
        best.retrieval,
        float(getattr(best.passage, "opens_answer", False)),
        math.log1p(sum(1 for other in others if best.score - other.score < RIVAL_WINDOW)),
        float(expect in _VALUES),
        float(expect in _HOW_WHY),
        float(expect is Expect.DEFINITION),
        float(share >= 1.0),
        max(share - STRONG, 0.0),
    ]


def weighed_candidates(question: Any, sources: Sequence[Source]) -> tuple[list[Passage], list[Weighed]]:
    """The passages of ``sources`` and the answerer's candidates among them, best first, with their coverage and
    BM25 share."""
    before = getattr(answering, "_question_before", None)
    found = [
        passage
        for source in sources
        for passage in (passages(source, before(source, sources)) if before else passages(source))
    ]
    ranked, _ = answering.candidates(question, found)
    weights = evidence.weights(question, found)
    hits = rank(question.query, [passage.text for passage in found])
    top = hits[0].score if hits and hits[0].score > 0 else 1.0
    shares = {id(found[hit.index]): hit.score / top for hit in hits}
    return found, [
        Weighed(
            candidate.passage,
            candidate.evidence,
            candidate.score,
            evidence._coverage(question.shape.terms, question.shape.scope, weights, candidate.passage),
            shares.get(id(candidate.passage), 0.0),
        )
        for candidate in ranked
    ]


def case_row(case: dict[str, Any]) -> dict[str, Any]:
    """``case``'s outcome under this answerer's rules, and its candidate's features and label."""
    sources = [Source(**item) for item in case["sources"]]
    phrase = normal(case["expect"]) if case["expect"] else None
    answer = answering.answer_question(case["question"], sources)
    rules = (
        "declined"
        if answer.startswith(answering.NOT_FOUND)
        else "right"
        if phrase and phrase in normal(answer)
        else "wrong"
    )
    question = evidence.read_question(case["question"])
    _, ranked = weighed_candidates(question, sources)
    index = next((i for i, candidate in enumerate(ranked) if candidate.evidence > answering.MIN_EVIDENCE), None)
    values = features(question, ranked, index, sources) if index is not None else None
    if index is not None and rules != "declined" and answer.startswith(ranked[index].passage.text):
        # The rules quote the same sentence: its answer (with any sentence joined to it) is the label.
        right = rules == "right"
    else:
        right = index is not None and phrase is not None and phrase in normal(ranked[index].passage.text)
    return {"set": case["set"], "id": case["id"], "features": values, "right": right, "rules": rules}


def main(cases: Path, sets: Sequence[str], output: Path) -> None:
    """Write the rows of ``cases`` in ``sets`` to ``output``."""
    rows = [case_row(case) for case in json.loads(cases.read_text()) if case["set"] in sets]
    output.write_text(json.dumps(rows))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2].split(","), Path(sys.argv[3]))
