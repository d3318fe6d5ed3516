"""Run a question set as real turns: each case in a new conversation, its documents attached as a user would.

The turns go through the product's own path (the session files service, then the turn pipeline with the
configured model), so what is measured is what users get. The runner asks one case at a time: a latency figure
measured beside other turns of the same run would count their work.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from orc.composition import Services
from orc.documents.catalog.availability import DocumentScope
from orc.documents.intake.uploads import Upload
from orc.errors import OrcError
from orc.evaluation.cases import EvalCase, document_path
from orc.evaluation.report import RECALL_AT
from orc.evaluation.scoring import CaseOutcome, failed, judge, retrieval_rank
from orc.evaluation.sources import AnswerRequests, SentSources, first_answer_request
from orc.principal import LOCAL_PRINCIPAL
from orc.turns import TurnRequest, TurnResult

PROCESSING_SECONDS = 600.0
"""How long a case's documents may take to be processed before the case is counted as an error."""


class _Documents:
    """The set's files, read once."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._data: dict[str, bytes] = {}

    async def uploads(self, names: Sequence[str]) -> list[Upload]:
        for name in names:
            if name not in self._data:
                self._data[name] = await asyncio.to_thread(self._read, name)
        return [Upload(name, self._data[name]) for name in names]

    def _read(self, name: str) -> bytes:
        # Checked again as it is read: a link made after the set was checked still cannot lead out.
        return document_path(self._folder, name).read_bytes()


async def _attach(services: Services, conversation_id: str, uploads: list[Upload]) -> str | None:
    """Attach the case's documents and wait until each is processed; the reason when one cannot be used."""
    files = services.foundation.session_files
    mutation = await files.add(LOCAL_PRINCIPAL, conversation_id, uploads, wait_seconds=0)
    if mutation.refused:
        refused = mutation.refused[0]
        return f"{refused.code}: {refused.filename}: {refused.message}"
    jobs = [job for _, job in await files.processing(LOCAL_PRINCIPAL, conversation_id)]
    if jobs:
        try:
            results = await asyncio.wait_for(asyncio.gather(*jobs), PROCESSING_SECONDS)
        except TimeoutError:
            return f"processing_timeout: documents not processed within {PROCESSING_SECONDS:.0f} s"
        for result in results:
            if result.outcome != "ready":
                return f"document_failed: {result.reason or result.outcome}"
    return None


async def run_case(
    services: Services, case: EvalCase, documents: _Documents, requests: AnswerRequests | None = None
) -> CaseOutcome:
    """Ask ``case``'s questions in a new conversation and judge the last answer (and, with ``requests`` recording
    the model's answer requests, the sources each turn sent it)."""
    conversation_id = f"eval-{uuid.uuid4().hex[:16]}"
    try:
        problem = await _attach(services, conversation_id, await documents.uploads(case.docs))
    except (OrcError, OSError) as exc:  # one case's documents never stop the run
        problem = f"{exc.code}: {exc.message}" if isinstance(exc, OrcError) else f"unreadable: {exc.strerror}"
    if problem is not None:
        return failed(case, problem)
    started = time.perf_counter()
    result: TurnResult | None = None
    latency_ms = 0.0
    input_tokens = output_tokens = model_calls = 0
    sent: list[SentSources | None] = []
    if requests is not None:
        requests.take()  # what the documents' processing asked, if anything, is not this case's answer request
    for turn in case.conversation:
        request = TurnRequest(
            question=turn.question,
            conversation_id=conversation_id,
            blob_names=list(case.docs),
            context_requests="never",
        )
        turn_started = time.perf_counter()
        try:
            answered = await services.orchestrator.ask(request)
        except OrcError as exc:
            return failed(case, f"{exc.code}: {exc.message}", total_latency_ms=(time.perf_counter() - started) * 1000)
        latency_ms = (time.perf_counter() - turn_started) * 1000
        if not isinstance(answered, TurnResult):  # context_requests="never" always answers
            return failed(case, "context_required: the turn paused instead of answering")
        result = answered
        if requests is not None:
            sent.append(first_answer_request(requests.take()))
        usage = result.metadata.usage
        input_tokens += usage.input_tokens
        output_tokens += usage.output_tokens
        model_calls += result.metadata.model_calls
    assert result is not None
    total_ms = (time.perf_counter() - started) * 1000
    rank: int | None = None
    checked = case.answerable and not case.follow_up
    if checked:
        found = await services.documents.library.search(
            LOCAL_PRINCIPAL, DocumentScope(session_id=conversation_id), case.scored.question, limit=max(RECALL_AT)
        )
        rank = retrieval_rank(case, [(hit.filename, hit.text) for hit in found.results])
    return judge(
        case,
        result.answer,
        result.citations,
        latency_ms=latency_ms,
        total_latency_ms=total_ms,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model_calls=model_calls,
        retrieval_rank=rank,
        retrieval_checked=checked,
        sent=sent if requests is not None else None,
    )


async def run_cases(
    services: Services,
    cases: Sequence[EvalCase],
    folder: Path,
    *,
    progress: Callable[[int, CaseOutcome], None] | None = None,
    requests: AnswerRequests | None = None,
) -> list[CaseOutcome]:
    """Run every case, one at a time, calling ``progress`` after each; ``requests`` records the answer requests
    of the model the services answer with (see :mod:`orc.evaluation.sources`)."""
    documents = _Documents(folder)
    outcomes = []
    for number, case in enumerate(cases, start=1):
        outcome = await run_case(services, case, documents, requests)
        outcomes.append(outcome)
        if progress is not None:
            progress(number, outcome)
    return outcomes
