"""One organization floods a costly operation that is not a turn while another organization does warm turns
(issue 25 item 4): uploads (and, with ``--rows``, the same without limits for scale).

The shape of ``bench.flood`` (whose server, calm caller and percentiles it reuses): ``orc serve`` (one worker,
embedded storage, the offline model, ``ORC_AUTH=api-key``) in a process of its own; the calm caller (organization
``globex``) posts ``calm_turns`` turns one after the other, alone and then while the flooder (organization
``acme``, a process of its own) sends ``flood_requests`` operations with ``flood_concurrency`` in flight.

- ``uploads``: each request uploads a 3-page PDF to a fresh session (parsed in the extraction worker, then
  digested), under the default upload window (``ORC_UPLOAD_RATE=300/hour``);
- ``uploads-no-limits``: the same with ``ORC_UPLOAD_RATE=off`` (how orc was before issue 25);
- ``exports``: each request exports the flooder's 300-turn conversation (about 200,000 characters) as a PDF, 4 in
  flight (``--flood-requests 40 --flood-concurrency 4`` by default for this row), under ``ORC_EXPORT_RATE=60/hour``.

Target: the calm organization's p95 under flood ≤ 2× its idle p95.

    python -m bench.flood_ops [--rows uploads exports] [--calm-turns 40] [--flood-requests N] [--flood-concurrency N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

from bench.common import percentile, summarize, temporary_home
from bench.flood import calm_turns, calm_under_flood, orc_serve
from orc.clock import utc_now
from orc.composition import build_runtime
from orc.conversations.models import AssistantMessage, UserMessage
from orc.principal import Principal
from orc.settings import Settings
from tests.documents.pdf_factory import make_pdf

KEYS = {
    "key-calm": {"organization": "globex", "user": "calm"},
    "key-flood": {"organization": "acme", "user": "flood"},
}
# The calm caller's 45 turns stay under the turn rate; everything else is the defaults a deployment gets.
COMMON = {"ORC_API_KEYS": json.dumps(KEYS), "ORC_RATE_LIMIT": "120/minute"}
ROWS: dict[str, dict[str, str]] = {
    "uploads": {**COMMON},
    "uploads-no-limits": {**COMMON, "ORC_UPLOAD_RATE": "off"},
    "exports": {**COMMON},
}
FLOODS = {"uploads": (3000, 50), "uploads-no-limits": (3000, 50), "exports": (40, 4)}
"""Each row's default flood: requests, and how many in flight."""
EXPORTED = "long-conversation"
EXPORT_TURNS = 300
PDF = make_pdf(
    [[f"Clause {page}.{line}: the tenant pays the rent monthly." for line in range(30)] for page in range(3)]
)


async def upload(session: aiohttp.ClientSession, base_url: str) -> int:
    """One upload of the PDF to a fresh session of the flooder; its status."""
    form = aiohttp.FormData()
    form.add_field("files", PDF, filename="lease.pdf", content_type="application/pdf")
    url = f"{base_url}/api/sessions/{uuid.uuid4().hex}/context/files"
    async with session.post(url, data=form, headers={"X-API-Key": "key-flood"}) as response:
        await response.read()
        return response.status


async def export(session: aiohttp.ClientSession, base_url: str) -> int:
    """One PDF export of the flooder's long conversation; its status."""
    url = f"{base_url}/api/sessions/{EXPORTED}/export?format=pdf"
    async with session.get(url, headers={"X-API-Key": "key-flood"}) as response:
        await response.read()
        return response.status


async def store_long_conversation(home: Path) -> None:
    """The flooder's 300-turn conversation, written to the server's store before it starts."""
    principal = Principal(organization="acme", user="flood")
    answer = "The notice period is 60 days [lease.txt::S1]. " * 14  # about 650 characters, as real answers run
    settings = Settings(home=home, auth="api-key", api_keys=json.dumps(KEYS))
    async with build_runtime(settings) as services:
        for seq in range(EXPORT_TURNS):
            await services.foundation.conversations.append_turn(
                principal,
                EXPORTED,
                UserMessage(content=f"Question {seq}: what is the notice period?", created_at=utc_now()),
                AssistantMessage(content=answer, created_at=utc_now()),
            )


OPERATIONS = {"uploads": upload, "uploads-no-limits": upload, "exports": export}


async def flood_only(base_url: str, row: str, requests: int, concurrency: int) -> dict[str, int]:
    """The flooder process: say it is starting, flood, return the statuses it got."""
    statuses: Counter[int] = Counter()
    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency + 8)
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:
        print("flooding", flush=True)

        async def one() -> None:
            async with gate:
                statuses[await OPERATIONS[row](session, base_url)] += 1

        await asyncio.gather(*(one() for _ in range(requests)))
    return {str(code): count for code, count in sorted(statuses.items())}


async def run_row(name: str, calm: int, requests: int, concurrency: int) -> dict[str, Any]:
    """One row: idle calm turns, then calm turns under the flood."""
    if name == "exports":
        with temporary_home() as home:
            await store_long_conversation(home)
            return await measure(name, home, calm, requests, concurrency)
    with temporary_home() as home:
        return await measure(name, home, calm, requests, concurrency)


async def measure(name: str, home: Path, calm: int, requests: int, concurrency: int) -> dict[str, Any]:
    """Idle calm turns, then calm turns while the flooder process runs."""
    with orc_serve(home, ROWS[name]) as base_url:
        connector = aiohttp.TCPConnector(limit=8)
        timeout = aiohttp.ClientTimeout(total=300)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:
            async with aiohttp.ClientSession(trust_env=False) as warm:
                await upload(warm, base_url)  # starts the extraction worker: not part of what is measured
            await calm_turns(session, base_url, 5)
            idle = await calm_turns(session, base_url, calm)
            under_flood, statuses = await calm_under_flood(
                session,
                base_url,
                calm,
                "bench.flood_ops",
                ["--rows", name, "--flood-requests", str(requests), "--flood-concurrency", str(concurrency)],
                wait=600,
            )
    idle_p95, flood_p95 = percentile(idle, 95), percentile(under_flood, 95)
    return {
        "row": name,
        "calm_idle_ms": summarize(idle),
        "calm_under_flood_ms": summarize(under_flood),
        "p95_ratio": round(flood_p95 / idle_p95, 2),
        "flooder_statuses": dict(sorted(statuses.items())),
        "passes": flood_p95 <= 2 * idle_p95,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calm-turns", type=int, default=40)
    parser.add_argument("--flood-requests", type=int, help="default: the row's (3000 uploads, 40 exports)")
    parser.add_argument("--flood-concurrency", type=int, help="default: the row's (50 uploads, 4 exports)")
    parser.add_argument("--rows", nargs="*", default=["uploads"], choices=list(ROWS))
    parser.add_argument("--flood-only", metavar="URL", help="be the flooder process of a run (internal)")
    args = parser.parse_args()
    for name in args.rows:
        requests = args.flood_requests or FLOODS[name][0]
        concurrency = args.flood_concurrency or FLOODS[name][1]
        if args.flood_only:
            print(json.dumps(asyncio.run(flood_only(args.flood_only, name, requests, concurrency))))
            return
        row = asyncio.run(run_row(name, args.calm_turns, requests, concurrency))
        print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
