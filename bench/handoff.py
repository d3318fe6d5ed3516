"""Targets (context handoff): a paused turn costs no model call while it waits; from the supply to the resumed
answer's first token ≤ 50 ms plus the model call.

Embedded storage (SQLite checkpoints and conversation store, local folder), the benchmark's scripted model with
``--latency`` seconds per request, the samples attached to each conversation. Each iteration asks a question the
samples cannot answer with ``"context_requests": "allow"`` (the turn pauses before its answer request), counts the
model requests made by the pause, then supplies a text and times the resumed stream until its first ``token``
event; "overhead" is that time minus the model's latency.
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench.common import BenchResult, Check, attach_samples, open_services, scripted_model, summarize, temporary_home
from bench.documents_common import exit_with, standalone
from orc.handoff import SupplyPayload, supplying
from orc.principal import LOCAL_PRINCIPAL
from orc.turns import ContextRequired, Turn, TurnRequest

TARGET_OVERHEAD_MS = 50.0
QUESTION = "What is the parking fee for the second car?"


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per model request")


async def run(args: argparse.Namespace) -> BenchResult:
    """Pause, supply and time the resumed first token, ``--iterations`` times."""
    result = BenchResult(name="handoff")
    model = scripted_model(args.latency)
    first_token_ms: list[float] = []
    paused_calls: list[int] = []
    with temporary_home() as home:
        async with open_services("embedded", model, home) as services:
            orchestrator = services.orchestrator
            for number in range(args.iterations + 2):  # the first two warm the process up
                conversation = f"bench-{number}"
                await attach_samples(services, conversation)
                before = model.calls
                paused = await orchestrator.ask(
                    TurnRequest(
                        question=QUESTION,
                        conversation_id=conversation,
                        blob_names=["lease.txt", "handbook.txt"],
                        context_requests="allow",
                    )
                )
                assert isinstance(paused, ContextRequired), paused
                calls_while_paused = model.calls - before
                started = time.perf_counter()
                begun = await orchestrator.resume(
                    LOCAL_PRINCIPAL,
                    supplying(
                        LOCAL_PRINCIPAL,
                        conversation,
                        paused.request_id,
                        [SupplyPayload(slot="evidence", text="Parking for a second car costs 40 euros per month.")],
                    ),
                )
                assert isinstance(begun, Turn)
                first: float | None = None
                async for event in begun.events():
                    if event["type"] == "token" and first is None:
                        first = (time.perf_counter() - started) * 1000
                assert first is not None
                if number >= 2:
                    first_token_ms.append(first)
                    paused_calls.append(calls_while_paused)
    overhead = [value - args.latency * 1000 for value in first_token_ms]
    result.rows.append({"measure": "supply → first token", **summarize(first_token_ms)})
    result.rows.append({"measure": "  minus the model call", **summarize(overhead)})
    result.checks.append(Check("model calls while paused (max)", float(max(paused_calls)), 0.0, unit="calls"))
    result.checks.append(
        Check(
            "resume → first token beyond the model call (p50)",
            round(statistics.median(overhead), 2),
            TARGET_OVERHEAD_MS,
        )
    )
    result.details["latency_s"] = args.latency
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
