"""A learned answer-or-decline decision for the offline model, fitted and estimated as a blind set would see it
(issue 39; figures in ``bench/README.md``, ``offline_trust``).

Reads the cases ``bench.offline_decision_cases`` recorded. For each, the sentence the answerer would quote (the
first it ranks with evidence above its floor) gets the features of ``bench.offline_decision_rows`` and a label
(its answer quotes the expected phrase, or not; an unanswerable question's never does). The model is a logistic
regression (L2 on standardised features, Newton's method); its threshold maximises right − :data:`WRONG_COST` ×
wrong answers, so an answer is given when it is right at least four times in five — the precision target.

Nothing is chosen on the cases it is scored on:

- *leave one set out*: each spent set is scored by a model fitted on the others (with ``bench.offline_answers``'
  tuning sets), its threshold chosen by leave one document out among them. This still flatters the model: the
  evidence it reads was tuned on every one of these sets;
- ``--history``: each blind set is scored with the answerer's code of the commit that added it (before its round
  tuned on it), the model fitted on the sets that existed then: what shipping the model at that round would have
  given on its blind set. Places to look are today's.

``python -m bench.offline_decision [--history]``; ``--score FILE`` scores the cases of a blind set recorded on their
own (``bench.offline_decision_cases --set blind_7 --output FILE``) with a model fitted on every spent set, printing
its figures and no case.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np

from bench.offline_decision_cases import CASES, REAL_SETS, SPENT_SETS
from bench.offline_decision_rows import FEATURES, case_row
from orc.contracts import SourceSpan
from orc.evaluation.scoring import normal
from orc.models.places import places_to_look

WRONG_COST = 4.0
"""A wrong answer costs this many right ones: answering pays when right ≥ 0.8 of the time."""
PENALTY = 1.0
"""The L2 penalty on the standardised coefficients."""
THRESHOLDS = np.round(np.arange(0.05, 0.96, 0.01), 2)
TRAINING_REAL = REAL_SETS[:2]
"""``bench.offline_answers``' tuning sets join the fit; its ``held_out.json`` is only scored."""
HISTORY = (
    ("blind_3", "6fac6b4ee1db928c1ba0bef7d4335ed32c65259c"),
    ("blind_4", "d84cb9ed76cb946c605e74461d42c7f087d3d4d5"),
    ("blind_5", "70212c5223141314082419eeb12483058a6ddc5a"),
    ("blind_6", "67d2d79af2693f0183670c8fb6641a924ed77360"),
)
"""Each blind set and the commit that added it, before the round that tuned on it."""
ROOT = Path(__file__).resolve().parent.parent
Model = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class Row:
    """One case as the decision sees it."""

    set: str
    group: str
    """Its document (the cross-validation leaves one out at a time)."""
    answerable: bool
    features: list[float] | None
    right: bool
    places_point: bool
    """A decline's places to look include the span holding the expected phrase."""
    rules: str
    """What the answerer's rules gave: ``right``, ``wrong`` or ``declined``."""


@dataclass
class Figures:
    """The ``offline_trust`` figures of one decision on some rows."""

    answered: int = 0
    right: int = 0
    unanswerable: int = 0
    unanswerable_answered: int = 0
    answerable: int = 0
    answer_or_place: int = 0
    questions: int = 0

    def __add__(self, other: Figures) -> Figures:
        return Figures(*(a + b for a, b in zip(vars(self).values(), vars(other).values(), strict=True)))

    def line(self) -> str:
        wrong = self.answered - self.right
        return (
            f"right {self.right}/{self.answered} ({self.right / max(self.answered, 1):.2f}); unanswerable answered "
            f"{self.unanswerable_answered}/{self.unanswerable}; answer or place {self.answer_or_place}/"
            f"{self.answerable} ({self.answer_or_place / max(self.answerable, 1):.2f}); wrong {wrong}/"
            f"{self.questions} ({wrong / max(self.questions, 1):.2f})"
        )


def figures(rows: Sequence[Row], answers: Sequence[bool]) -> Figures:
    """What answering exactly the rows where ``answers`` holds gives (each answer right when its row is)."""
    pairs = list(zip(rows, answers, strict=True))
    return Figures(
        answered=sum(a for _, a in pairs),
        right=sum(a and r.right for r, a in pairs),
        unanswerable=sum(not r.answerable for r in rows),
        unanswerable_answered=sum(a and not r.answerable for r, a in pairs),
        answerable=sum(r.answerable for r in rows),
        answer_or_place=sum((a and r.right) or (not a and r.places_point) for r, a in pairs if r.answerable),
        questions=len(rows),
    )


def rules(rows: Sequence[Row]) -> Figures:
    """The rules' own outcomes, counted the same way."""
    answered = [r for r in rows if r.rules != "declined"]
    return Figures(
        answered=len(answered),
        right=sum(r.rules == "right" for r in answered),
        unanswerable=sum(not r.answerable for r in rows),
        unanswerable_answered=sum(not r.answerable for r in answered),
        answerable=sum(r.answerable for r in rows),
        answer_or_place=sum(
            r.rules == "right" or (r.rules == "declined" and r.places_point) for r in rows if r.answerable
        ),
        questions=len(rows),
    )


def fit(rows: Sequence[Row]) -> Model:
    """Mean, scale and coefficients (intercept last) of the penalised logistic regression on ``rows``."""
    usable = [r for r in rows if r.features is not None]
    x = np.array([r.features for r in usable])
    y = np.array([float(r.right) for r in usable])
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    ridge = np.eye(z.shape[1]) * PENALTY
    ridge[-1, -1] = 0.0
    for _ in range(50):
        p = 1 / (1 + np.exp(-z @ w))
        step = np.linalg.solve((z * (p * (1 - p))[:, None]).T @ z + ridge, z.T @ (p - y) + ridge @ w)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return mean, scale, w


def probabilities(model: Model, rows: Sequence[Row]) -> list[float | None]:
    """Each row's chance of a right answer (None: no sentence clears the evidence floor)."""
    mean, scale, w = model
    result: list[float | None] = []
    for r in rows:
        if r.features is None:
            result.append(None)
            continue
        z = np.append((np.array(r.features) - mean) / scale, 1.0)
        result.append(float(1 / (1 + np.exp(-z @ w))))
    return result


def held_out(rows: Sequence[Row], key: Callable[[Row], str]) -> list[float | None]:
    """Each row's probability from a model fitted without the rows sharing its ``key``."""
    result: list[float | None] = [None] * len(rows)
    for name in sorted({key(r) for r in rows}):
        model = fit([r for r in rows if key(r) != name])
        inside = [index for index, r in enumerate(rows) if key(r) == name]
        for index, p in zip(inside, probabilities(model, [rows[i] for i in inside]), strict=True):
            result[index] = p
    return result


def auc(rows: Sequence[Row], chances: Sequence[float | None]) -> float:
    """How often a right answer's chance exceeds a wrong one's (ties count half), over rows with a candidate."""
    scored = [(p, r.right) for r, p in zip(rows, chances, strict=True) if p is not None]
    right = np.array([p for p, label in scored if label])
    wrong = np.array([p for p, label in scored if not label])
    if not len(right) or not len(wrong):
        return float("nan")
    return float((right[:, None] > wrong[None, :]).mean() + 0.5 * (right[:, None] == wrong[None, :]).mean())


def answers(chances: Sequence[float | None], threshold: float) -> list[bool]:
    return [p is not None and p >= threshold for p in chances]


def best_threshold(rows: Sequence[Row]) -> float:
    """The threshold maximising right − WRONG_COST × wrong on ``rows``, by leave one document out."""
    chances = held_out(rows, lambda r: r.group)

    def utility(threshold: float) -> float:
        found = figures(rows, answers(chances, threshold))
        return found.right - WRONG_COST * (found.answered - found.right)

    return float(max(THRESHOLDS, key=lambda t: (utility(t), -t)))


def scored(training: Sequence[Row], scoring: Sequence[Row]) -> tuple[list[bool], float]:
    """The decisions on ``scoring`` of a model and threshold chosen on ``training`` alone."""
    threshold = best_threshold(training)
    return answers(probabilities(fit(training), scoring), threshold), threshold


def _places_point(case: dict[str, Any]) -> bool:
    if not case["expect"]:
        return False
    spans = [
        SourceSpan(
            ref=s["ref"],
            document=s["ref"].rsplit("::", 1)[0],
            span_id=s["ref"].rsplit("::", 1)[1],
            page=s["page"],
            text=s["text"],
            section=s["section"],
        )
        for s in case["sources"]
    ]
    phrase = normal(case["expect"])
    texts = {span.ref: span.text for span in spans}
    return any(phrase in normal(texts[place.ref]) for place in places_to_look(case["question"], spans))


def to_rows(cases: Sequence[dict[str, Any]], computed: Sequence[dict[str, Any]]) -> list[Row]:
    """Rows from the recorded ``cases`` and their ``computed`` features and outcomes (same order)."""
    return [
        Row(
            case["set"],
            case["document"] or case["set"],
            case["expect"] is not None,
            found["features"],
            found["right"],
            _places_point(case),
            found["rules"],
        )
        for case, found in zip(cases, computed, strict=True)
    ]


def leave_one_set_out(rows: Sequence[Row]) -> None:
    """Print each spent set's figures under the rules and under a model fitted without it."""
    training = [r for r in rows if r.set in SPENT_SETS or r.set in TRAINING_REAL]
    total_rules, total_learned = Figures(), Figures()
    for name in SPENT_SETS:
        held = [r for r in rows if r.set == name]
        decided, threshold = scored([r for r in training if r.set != name], held)
        total_rules += rules(held)
        total_learned += figures(held, decided)
        print(f"{name:9} rules   {rules(held).line()}")
        print(f"{name:9} learned {figures(held, decided).line()} (threshold {threshold:.2f})")
    print(f"spent     rules   {total_rules.line()}\nspent     learned {total_learned.line()}")
    print(f"spent     AUC (leave one set out) {auc(training, held_out(training, lambda r: r.set)):.2f}")
    decided, threshold = scored(training, rows)
    for name in REAL_SETS:
        chosen = [(r, a) for r, a in zip(rows, decided, strict=True) if r.set == name]
        found = figures([r for r, _ in chosen], [a for _, a in chosen])
        print(f"{name}: rules {rules([r for r, _ in chosen]).line()}\n    learned on every set {found.line()}")
    w = fit(training)[2]
    print(f"fitted on every set: threshold {threshold:.2f}; coefficients (standardised):")
    print(
        ", ".join(f"{name} {value:+.2f}" for name, value in zip(FEATURES, w[:-1], strict=True)),
        f"intercept {w[-1]:+.2f}",
    )


def _rows_at(commit: str, cases_path: Path, sets: Sequence[str], folder: Path) -> list[dict[str, Any]]:
    """``bench.offline_decision_rows`` run under the answerer of ``commit``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "orc"], check=True, capture_output=True).stdout
    code = folder / commit
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(code, filter="data")
    output = folder / f"{commit}.json"
    environment = {**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{ROOT}"}
    command = [sys.executable, "-m", "bench.offline_decision_rows", str(cases_path), ",".join(sets), str(output)]
    subprocess.run(command, check=True, env=environment, cwd=folder)
    return list(json.loads(output.read_text()))


def history(cases: Sequence[dict[str, Any]], cases_path: Path) -> None:
    """Print each blind set's figures under its day's rules and under a model fitted on the sets before it."""
    total_rules, total_learned = Figures(), Figures()
    curve: dict[float, Figures] = {}
    pooled: list[tuple[Row, float | None]] = []
    with tempfile.TemporaryDirectory(prefix="orc-decision-") as folder:
        for blind, commit in HISTORY:
            sets = SPENT_SETS[: SPENT_SETS.index(blind) + 1]
            chosen = [case for case in cases if case["set"] in sets]
            rows = to_rows(chosen, _rows_at(commit, cases_path, sets, Path(folder)))
            training, held = [r for r in rows if r.set != blind], [r for r in rows if r.set == blind]
            decided, threshold = scored(training, held)
            total_rules += rules(held)
            total_learned += figures(held, decided)
            print(f"{blind} at {commit[:7]}: rules   {rules(held).line()}")
            print(f"{blind} at {commit[:7]}: learned {figures(held, decided).line()} (threshold {threshold:.2f})")
            chances = probabilities(fit(training), held)
            pooled += zip(held, chances, strict=True)
            for t in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0):
                curve[t] = curve.get(t, Figures()) + figures(held, answers(chances, t))
    print(f"blind sets, rules of their day: {total_rules.line()}")
    print(f"blind sets, learned:            {total_learned.line()}")
    print(f"blind sets, AUC of the learned chances: {auc([r for r, _ in pooled], [p for _, p in pooled]):.2f}")
    for t, found in curve.items():
        # At 1.0 nothing is answered: what the places to look alone give.
        print(f"blind sets, learned at a fixed threshold {t:.1f}: {found.line()}")


def score(cases: Sequence[dict[str, Any]], scored_cases: Sequence[dict[str, Any]]) -> None:
    """Print the figures of each set of ``scored_cases`` under the rules and under a model fitted on the training
    sets of ``cases`` other than those — the figures only, never a case, so a blind set stays blind."""
    names = sorted({case["set"] for case in scored_cases})
    training = [
        r
        for r in to_rows(cases, [case_row(case) for case in cases])
        if (r.set in SPENT_SETS or r.set in TRAINING_REAL) and r.set not in names
    ]
    rows = to_rows(scored_cases, [case_row(case) for case in scored_cases])
    decided, threshold = scored(training, rows)
    for name in names:
        chosen = [(r, a) for r, a in zip(rows, decided, strict=True) if r.set == name]
        held = [r for r, _ in chosen]
        print(f"{name} rules   {rules(held).line()}")
        print(f"{name} learned {figures(held, [a for _, a in chosen]).line()} (threshold {threshold:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--cases", type=Path, default=CASES, help="the recorded cases (bench.offline_decision_cases)")
    parser.add_argument("--history", action="store_true", help="also score each blind set with its day's code")
    parser.add_argument("--score", type=Path, help="score only these recorded cases (a blind set), figures only")
    args = parser.parse_args()
    cases = json.loads(args.cases.read_text())
    if args.score:
        score(cases, json.loads(args.score.read_text()))
        return
    leave_one_set_out(to_rows(cases, [case_row(case) for case in cases]))
    if args.history:
        history(cases, args.cases)


if __name__ == "__main__":
    main()
