"""Target (issue 14): the model fault matrix — (429, 5xx, hang, cut stream, context too long, 401) × (JSON, NDJSON,
SSE) — every cell a coded error within the turn deadline, nothing stored, success on retry.

The app (in process, embedded storage) talks to a local OpenAI-compatible endpoint (``tests.models.openai_endpoint``)
that answers each fault as a real provider does, with no client retries (``ORC_MODEL_MAX_RETRIES=0``) and a turn
deadline of ``--deadline`` seconds. Per cell: the status and ``code`` the caller got (the final ``error`` event for
the streams), the time to it, whether the conversation exists afterwards, and whether the same turn then succeeds.
"""

from __future__ import annotations

import argparse
import time
import uuid

from bench.common import BenchResult, Check
from bench.documents_common import exit_with, standalone
from orc.settings import Settings
from tests.adversarial.test_model_faults import ANSWER, FAULTS, FORMATS, last_event
from tests.http.conftest import open_client
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, serve


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--deadline", type=float, default=5.0, help="ORC_TURN_TIMEOUT of the run (seconds)")


async def run(args: argparse.Namespace) -> BenchResult:
    """Every fault in every format, then a retry."""
    result = BenchResult(name="model_faults")
    endpoints = serve(OpenAIEndpoint())
    running = next(endpoints)
    bad_cells = 0
    slowest = 0.0
    try:
        settings = Settings(
            model="openai:test-model",
            model_base_url=running.base_url,
            model_max_retries=0,
            model_timeout_seconds=30,
            turn_timeout=args.deadline,
            # The endpoint answers requests in order: a background title request would take the next cell's reply.
            generated_titles=False,
        )
        async with open_client(settings) as client:
            for fault, (reply, status, code) in FAULTS.items():
                for fmt, accept in FORMATS.items():
                    running.endpoint.reset(reply)
                    conversation = str(uuid.uuid4())
                    turn = {"question": "When is the rent due?", "conversation_id": conversation}
                    started = time.perf_counter()
                    failed = await client.post("/api/orc", json=turn, headers={"Accept": accept})
                    elapsed = time.perf_counter() - started
                    if fmt == "json":
                        got = (failed.status_code, failed.json().get("code"))
                    else:
                        event = last_event(failed, fmt)
                        got = (event.get("status"), event.get("code"))
                    stored = (await client.get(f"/api/sessions/{conversation}")).status_code != 404
                    running.endpoint.reset(*[Reply(text=ANSWER)] * 4)
                    retried = await client.post("/api/orc", json=turn)
                    ok = got == (status, code) and not stored and retried.status_code == 200
                    bad_cells += not ok
                    slowest = max(slowest, elapsed)
                    result.rows.append(
                        {
                            "fault": fault,
                            "format": fmt,
                            "got": f"{got[0]} {got[1]}",
                            "seconds": round(elapsed, 3),
                            "stored": stored,
                            "retry": retried.status_code,
                            "ok": ok,
                        }
                    )
    finally:
        endpoints.close()
    result.checks.append(Check("cells not coded, stored, or not retryable", float(bad_cells), 0.0, unit="cells"))
    result.checks.append(
        Check("slowest error (the turn deadline + 0.25 s)", round(slowest, 2), args.deadline + 0.25, unit="s")
    )
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
