"""How one case's answer is judged. Pure: nothing here runs a turn or reads storage.

- An answerable case **hits** when one of the answer's citations quotes a sentence holding the expected phrase
  (whitespace and case ignored) and the answer does not say it could not find the answer: a decline is never a
  hit, whatever it cites.
- An unanswerable case **passes** when the answer declines and cites nothing.
- **Citation precision** is the share of an answerable case's citations that point into its target document (and
  its page, when the case names one).
- **Retrieval** is judged apart from the answer: whether ``documents.search`` over the case's documents ranks a
  span holding the expected phrase within its first *k* results.
- **Source recall** is judged on what the model was sent: whether the scored turn's answer request carried a
  source of the target holding the expected phrase (:mod:`orc.evaluation.sources`). A miss there is retrieval's;
  a source hit with an answer miss is the model's.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from pydantic import BaseModel, Field

from orc.contracts import Citation
from orc.evaluation.cases import EvalCase
from orc.evaluation.sources import SentSources
from orc.models.declines import is_decline


def normal(text: str) -> str:
    """``text`` compatibility-normalized (PDF ligatures such as "ﬁ" become "fi"), with whitespace collapsed,
    typographic quotes made plain and case folded, for phrase matching."""
    plain = unicodedata.normalize("NFKC", text)
    plain = plain.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return " ".join(plain.split()).casefold()


class CaseOutcome(BaseModel):
    """What one case got, and how it was judged."""

    id: str
    question: str = Field(description="The scored (last) question.")
    answerable: bool
    follow_up: bool
    passed: bool = Field(description="A hit for an answerable case; a clean decline for an unanswerable one.")
    declined: bool
    answer: str
    quotes: list[str]
    cited_documents: list[str]
    citations_in_target: int
    retrieval_rank: int | None = Field(
        default=None, description="1-based rank of the first search result holding the phrase (None: not found)."
    )
    retrieval_checked: bool = False
    source_hit: bool | None = Field(
        default=None,
        description="Whether the scored turn's answer request carried a source of the target holding the phrase "
        "(None: unanswerable, or the requests were not recorded).",
    )
    sources_sent: int | None = Field(default=None, description="Sources in the scored turn's answer request.")
    source_tokens: list[int] = Field(
        default_factory=list, description="Tokens of the sources each turn's answer request carried, in order."
    )
    latency_ms: float = Field(description="Time of the scored turn.")
    total_latency_ms: float = Field(description="Time of every turn of the case.")
    input_tokens: int = 0
    output_tokens: int = 0
    model_calls: int = 0
    error: str | None = Field(default=None, description="The coded error that stopped the case, if one did.")


def judge(
    case: EvalCase,
    answer: str,
    citations: Sequence[Citation],
    *,
    latency_ms: float,
    total_latency_ms: float,
    input_tokens: int = 0,
    output_tokens: int = 0,
    model_calls: int = 0,
    retrieval_rank: int | None = None,
    retrieval_checked: bool = False,
    sent: Sequence[SentSources | None] | None = None,
) -> CaseOutcome:
    """Judge the answer to ``case``'s scored question; ``sent`` holds each turn's answer request, when they were
    recorded."""
    declined = is_decline(answer)
    quotes = [citation.quote for citation in citations]
    if case.answerable:
        phrase = normal(case.scored.expect or "")
        passed = not declined and any(phrase in normal(quote) for quote in quotes)
    else:
        passed = declined and not citations
    in_target = sum(
        1
        for citation in citations
        if citation.document == case.target and (case.page is None or citation.page == case.page)
    )
    scored = sent[-1] if sent else None
    source_hit = None
    if sent is not None and case.answerable and case.target is not None:
        source_hit = scored is not None and scored.holds(case.target, case.scored.expect or "", normal)
    return CaseOutcome(
        id=case.id,
        question=case.scored.question,
        answerable=case.answerable,
        follow_up=case.follow_up,
        passed=passed,
        declined=declined,
        answer=answer,
        quotes=quotes,
        cited_documents=[citation.document for citation in citations],
        citations_in_target=in_target,
        retrieval_rank=retrieval_rank,
        retrieval_checked=retrieval_checked,
        source_hit=source_hit,
        sources_sent=None if sent is None else len(scored.sources) if scored is not None else 0,
        source_tokens=[request.tokens if request is not None else 0 for request in sent or ()],
        latency_ms=round(latency_ms, 1),
        total_latency_ms=round(total_latency_ms, 1),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model_calls=model_calls,
    )


def failed(case: EvalCase, error: str, *, total_latency_ms: float = 0.0) -> CaseOutcome:
    """A case a coded error stopped: it never passes."""
    return CaseOutcome(
        id=case.id,
        question=case.scored.question,
        answerable=case.answerable,
        follow_up=case.follow_up,
        passed=False,
        declined=False,
        answer="",
        quotes=[],
        cited_documents=[],
        citations_in_target=0,
        latency_ms=0.0,
        total_latency_ms=round(total_latency_ms, 1),
        error=error,
    )


def retrieval_rank(case: EvalCase, results: Sequence[tuple[str, str]]) -> int | None:
    """The 1-based rank of the first ``(filename, text)`` result of the target that holds the expected phrase."""
    phrase = normal(case.scored.expect or "")
    for rank, (filename, text) in enumerate(results, start=1):
        if filename == case.target and phrase in normal(text):
            return rank
    return None
