"""Target 2: model calls on a turn's critical path — a document turn (``blob_names``) makes 1, first turn and
follow-up alike (issue 11; it was 2 / 3); a turn without attached files at most 2 (one planning call + the answer).

Each turn is counted two ways: ``result.metadata.model_calls`` (what the orchestrator reports) and the
difference in the scripted model's ``.calls`` (what the model actually received). Then the same turns run
with a model that takes ``latency`` seconds per request and records when each request started: the length of
the union of the ``[start, start + latency]`` intervals, divided by the latency, is the number of calls on the
turn's critical path (calls that overlap share one latency). Unlike "extra wall time / latency" this does not
depend on the orchestration overhead or on load from other processes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from bench.common import (
    SAMPLE_NAMES,
    BenchResult,
    Check,
    attach_samples,
    cite_first_source,
    open_services,
    temporary_home,
)
from orc.testing import FunctionChatModel
from orc.turns import TurnRequest

FIRST_TURN_LIMIT = 1
FOLLOW_UP_LIMIT = 1
NO_FILES_LIMIT = 2
"""Without attached files: one planning call, then the answer (no separate routing or rewrite call)."""


@dataclass(frozen=True)
class Step:
    """One turn of the scenario."""

    label: str
    question: str
    blob_names: list[str]
    limit: int | None  # the target, when there is one


SCENARIO = [
    Step("first turn, 3 blob_names", "What is the monthly rent?", SAMPLE_NAMES, FIRST_TURN_LIMIT),
    Step("follow-up, same blob_names (cache hit)", "And the notice period?", SAMPLE_NAMES, FOLLOW_UP_LIMIT),
    Step("follow-up, fewer blob_names (cache miss)", "How long is the warranty?", ["warranty.txt"], FOLLOW_UP_LIMIT),
    # The model plans a documents.* call here: one planning call, then the answer.
    Step("follow-up, no blob_names", "Thanks, anything else?", [], NO_FILES_LIMIT),
]


def sequential_calls(starts: list[float], latency: float) -> int:
    """How many latencies the calls that started at ``starts`` (seconds) add up to, overlaps merged."""
    covered = 0.0
    end = float("-inf")
    for start in sorted(starts):
        covered += min(latency, start + latency - end) if start < end else latency
        end = max(end, start + latency)
    return round(covered / latency)


def _recording_model(latency: float, starts: list[float]) -> FunctionChatModel:
    """The benchmark model, also noting when each request starts (before its simulated latency)."""

    def respond(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
        starts.append(time.perf_counter())
        return cite_first_source(messages, tools)

    return FunctionChatModel(respond, latency=latency)


async def _scenario(latency: float) -> list[dict[str, Any]]:
    """Run :data:`SCENARIO` on one conversation (embedded storage) and count each turn's model calls."""
    starts: list[float] = []
    model = _recording_model(latency, starts)
    rows: list[dict[str, Any]] = []
    with temporary_home() as home:
        async with open_services("embedded", model, home) as services:
            orchestrator = services.orchestrator
            conversation = "bench-model-calls"
            await attach_samples(services, conversation)
            for step in SCENARIO:
                before = model.calls
                del starts[:]
                started = time.perf_counter()
                result = await orchestrator.ask(
                    TurnRequest(question=step.question, conversation_id=conversation, blob_names=step.blob_names)
                )
                wall = time.perf_counter() - started
                requests = model.requests[before:]
                row: dict[str, Any] = {
                    "turn": step.label,
                    "metadata_model_calls": result.metadata.model_calls,
                    "scripted_model_calls": model.calls - before,
                    "planning_calls": sum(1 for request in requests if request.tool_names),
                    "cache": result.metadata.cache,
                    "tool": result.metadata.tool,
                    "limit": step.limit,
                    "wall_ms": round(wall * 1000, 2),
                }
                if latency:
                    row["critical_path_calls"] = sequential_calls(starts, latency)
                rows.append(row)
    return rows


async def run(latency: float = 0.2) -> BenchResult:
    """Count the calls with a zero-latency model, then the critical path with ``latency`` seconds per call."""
    result = BenchResult(name="model_calls")
    counted = await _scenario(0.0)
    timed = await _scenario(latency) if latency > 0 else []
    for index, row in enumerate(counted):
        if timed:
            row["latency_s"] = latency
            row["wall_ms_with_latency"] = timed[index]["wall_ms"]
            row["critical_path_calls"] = timed[index]["critical_path_calls"]
        result.rows.append(row)
        if row["limit"] is not None:
            for source in ("metadata_model_calls", "scripted_model_calls", "critical_path_calls"):
                if source in row:
                    result.checks.append(
                        Check(f"{row['turn']}: {source}", float(row[source]), float(row["limit"]), "calls")
                    )
    result.details["latency_s"] = latency
    return result
