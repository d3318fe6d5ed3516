"""The totals of an ``orc eval`` run, as JSON and as Markdown."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence

from pydantic import BaseModel, Field

from orc.evaluation.scoring import CaseOutcome
from orc.output_policy import as_text

RECALL_AT = (5, 8)
"""The ranks at which retrieval recall is reported."""


class Share(BaseModel):
    """``passed`` of ``total`` (``rate`` is None when there is nothing to count)."""

    passed: int
    total: int
    rate: float | None

    @classmethod
    def of(cls, passed: int, total: int) -> Share:
        """The share ``passed / total``."""
        return cls(passed=passed, total=total, rate=round(passed / total, 3) if total else None)

    def __str__(self) -> str:
        return f"{self.passed}/{self.total}" + (f" ({self.rate:.0%})" if self.rate is not None else "")


class Latency(BaseModel):
    """Milliseconds per scored question."""

    mean: float
    p50: float
    p95: float
    total: float


class TokenSpread(BaseModel):
    """Tokens of the sources per answer request, over every turn that made one."""

    turns: int
    p50: float
    p95: float
    max: int


class Report(BaseModel):
    """What a question set scored."""

    set: str
    model: str
    embeddings: str | None = None
    cases: int
    answer_hits: Share = Field(description="Answerable cases (single and follow-up) whose citation quotes the phrase.")
    single_hits: Share
    follow_up_hits: Share
    unanswerable_declined: Share = Field(description="Unanswerable cases declined with no citation.")
    citation_precision: Share = Field(description="Citations of answerable cases that point into the target.")
    retrieval_recall: dict[str, Share] = Field(description="recall@k of documents.search over single questions.")
    source_recall: Share | None = Field(
        default=None,
        description="Answerable cases whose scored answer request carried a source holding the phrase (None: the "
        "requests were not recorded).",
    )
    single_source_recall: Share | None = None
    follow_up_source_recall: Share | None = None
    source_tokens: TokenSpread | None = Field(
        default=None, description="Tokens of the sources per answer request, over every turn of the run."
    )
    latency_ms: Latency
    input_tokens: int
    output_tokens: int
    tokens_per_question: float
    model_calls: int
    errors: int
    outcomes: list[CaseOutcome]


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))
    return round(ordered[index], 1)


def summarize(name: str, model: str, outcomes: Sequence[CaseOutcome], *, embeddings: str | None = None) -> Report:
    """The totals of ``outcomes``."""
    answerable = [o for o in outcomes if o.answerable]
    singles = [o for o in answerable if not o.follow_up]
    follow_ups = [o for o in answerable if o.follow_up]
    unanswerable = [o for o in outcomes if not o.answerable]
    checked = [o for o in singles if o.retrieval_checked]
    latencies = [o.latency_ms for o in outcomes if o.error is None]
    questions = max(1, len(outcomes))
    input_tokens = sum(o.input_tokens for o in outcomes)
    output_tokens = sum(o.output_tokens for o in outcomes)
    recorded = [o for o in outcomes if o.source_tokens]
    per_turn = [tokens for o in recorded for tokens in o.source_tokens if tokens]

    def recall(group: Sequence[CaseOutcome]) -> Share | None:
        judged = [o for o in group if o.source_hit is not None]
        return Share.of(sum(bool(o.source_hit) for o in judged), len(judged)) if recorded else None

    return Report(
        set=name,
        model=model,
        embeddings=embeddings,
        cases=len(outcomes),
        answer_hits=Share.of(sum(o.passed for o in answerable), len(answerable)),
        single_hits=Share.of(sum(o.passed for o in singles), len(singles)),
        follow_up_hits=Share.of(sum(o.passed for o in follow_ups), len(follow_ups)),
        unanswerable_declined=Share.of(sum(o.passed for o in unanswerable), len(unanswerable)),
        citation_precision=Share.of(
            sum(o.citations_in_target for o in answerable), sum(len(o.cited_documents) for o in answerable)
        ),
        retrieval_recall={
            f"@{k}": Share.of(
                sum(o.retrieval_rank is not None and o.retrieval_rank <= k for o in checked), len(checked)
            )
            for k in RECALL_AT
        },
        source_recall=recall(answerable),
        single_source_recall=recall(singles),
        follow_up_source_recall=recall(follow_ups),
        source_tokens=(
            TokenSpread(
                turns=len(per_turn),
                p50=_percentile(per_turn, 50),
                p95=_percentile(per_turn, 95),
                max=max(per_turn),
            )
            if per_turn
            else None
        ),
        latency_ms=Latency(
            mean=round(sum(latencies) / len(latencies), 1) if latencies else 0.0,
            p50=_percentile(latencies, 50),
            p95=_percentile(latencies, 95),
            total=round(sum(o.total_latency_ms for o in outcomes), 1),
        ),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        tokens_per_question=round((input_tokens + output_tokens) / questions, 1),
        model_calls=sum(o.model_calls for o in outcomes),
        errors=sum(o.error is not None for o in outcomes),
        outcomes=list(outcomes),
    )


def summary_lines(report: Report) -> list[tuple[str, str]]:
    """The headline figures, as (measure, value) rows."""
    rows = [
        ("answer hits (cited sentence holds the expected phrase)", str(report.answer_hits)),
        ("  single questions", str(report.single_hits)),
        ("  follow-ups", str(report.follow_up_hits)),
        ("unanswerable questions declined, citing nothing", str(report.unanswerable_declined)),
        ("citation precision (citations into the target)", str(report.citation_precision)),
    ]
    rows += [(f"retrieval recall{k} (documents.search)", str(share)) for k, share in report.retrieval_recall.items()]
    if report.source_recall is not None:
        rows += [
            ("source recall (answer request holds the phrase)", str(report.source_recall)),
            ("  single questions", str(report.single_source_recall)),
            ("  follow-ups", str(report.follow_up_source_recall)),
        ]
    if report.source_tokens is not None:
        spread = report.source_tokens
        rows.append(
            ("source tokens per answer request, p50 / p95 / max", f"{spread.p50:.0f} / {spread.p95:.0f} / {spread.max}")
        )
    rows += [
        ("latency per question, p50 / p95 (ms)", f"{report.latency_ms.p50:.0f} / {report.latency_ms.p95:.0f}"),
        (
            "tokens in / out (per question)",
            f"{report.input_tokens} / {report.output_tokens} ({report.tokens_per_question})",
        ),
        ("model calls", str(report.model_calls)),
        ("cases stopped by an error", str(report.errors)),
    ]
    return rows


_MARKDOWN_ACTIVE = re.compile(r"([\\`*_\[\]|~])")
"""What Markdown reads as syntax inside a table cell (``<`` and ``&`` are escaped as HTML)."""


def _cell(text: str, limit: int = 160) -> str:
    """``text`` as literal Markdown on one line: white space (newlines too) folded, cut at ``limit`` characters,
    HTML escaped (a quoted ``<script>`` is text, never markup) and Markdown's own characters backslashed (``|``
    cannot end a cell, ``*`` cannot start emphasis). An answer arrives with the output policy's escapes
    (``&lt;string&gt;``): they are undone first, or the page would show them escaped twice."""
    flat = " ".join(as_text(text).split())
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return _MARKDOWN_ACTIVE.sub(r"\\\1", html.escape(flat, quote=False))


def to_markdown(report: Report) -> str:
    """The report as a Markdown page: the totals, then every case."""
    title = f"# orc eval: {_cell(report.set)}"
    setup = f"Model {_cell(report.model)}" + (f", embeddings {_cell(report.embeddings)}" if report.embeddings else "")
    lines = [title, "", f"{setup}; {report.cases} cases.", "", "| measure | result |", "| --- | --- |"]
    lines += [f"| {measure.strip()} | {value} |" for measure, value in summary_lines(report)]
    lines += [
        "",
        "| case | result | question | answer | search rank | sources | ms |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for o in report.outcomes:
        verdict = "error" if o.error else ("pass" if o.passed else "miss")
        kind = "unanswerable" if not o.answerable else ("follow-up" if o.follow_up else "")
        rank = "–" if not o.retrieval_checked else (str(o.retrieval_rank) if o.retrieval_rank else "not found")
        sources = "–" if o.source_hit is None else ("hold it" if o.source_hit else "miss")
        if o.source_tokens:
            sources += f", {o.source_tokens[-1]} tokens"
        answer = o.error or o.answer
        label = f"{_cell(o.id)} ({kind})" if kind else _cell(o.id)
        lines.append(
            f"| {label} | {verdict} | {_cell(o.question)} | {_cell(answer)} | {rank} | {sources} | {o.latency_ms:.0f} |"
        )
    return "\n".join(lines) + "\n"
