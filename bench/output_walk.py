"""Target (issue 36): the hostile-output walk — 0 raw texts on every route and every MCP tool.

``orc serve`` in a process of its own (API keys, ``ORC_OUTPUT_IMAGE_HOSTS=img.example``), driven over loopback: a
session seeded with the hostile corpus everywhere text can come from (document text, file names, titles, a feedback
comment, context names, supplied text, the suggestions of paused turns, digest facts — ``tests/adversarial/walk.py``),
then every route of the served OpenAPI document and every tool ``/api/mcp`` lists called, JSON, NDJSON and
server-sent events alike. A raw text is a ``<script`` or ``<img`` tag, a ``](javascript:`` link, a tag with an event
handler, an image from a host not allowed, or anything a careless Markdown client would run, fetch or follow.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.common import BenchResult, Check, temporary_home
from bench.documents_common import exit_with, standalone
from bench.flood import serve_process
from tests.adversarial.walk import seed, unwalked_routes, unwalked_tools, walk_routes, walk_tools

KEY = "key-walk"


def configure(parser: argparse.ArgumentParser) -> None:
    """No options beyond the common ones."""


async def run(args: argparse.Namespace) -> BenchResult:
    """Seed, walk every route and tool, count what was read and what was raw."""
    result = BenchResult(name="output_walk")
    with temporary_home() as home:
        settings = {"ORC_OUTPUT_IMAGE_HOSTS": "img.example"}
        with serve_process(home / "home", settings, {KEY: {"organization": "acme", "user": "walker"}}) as (url, _):
            headers = {"X-API-Key": KEY}
            async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120, trust_env=False) as client:
                started = time.perf_counter()
                document = (await client.get("/api/openapi.json")).json()
                walk = await seed(client)
                seeded = time.perf_counter()
                await walk_routes(client, walk)
                async with (
                    streamable_http_client(f"{url}/api/mcp", http_client=client) as (read, write, _),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    listed = await walk_tools(session, walk)
                finished = time.perf_counter()
    raw = Counter(finding.where for finding in walk.findings)
    for where, responses in sorted(walk.responses.items()):
        result.rows.append({"route or tool": where, "responses and events read": responses, "raw": raw.get(where, 0)})
    routes = {where for where in walk.responses if not where.startswith("tool ")}
    tools = {where for where in walk.responses if where.startswith("tool ")}
    result.rows.append(
        {
            "route or tool": f"total: {len(routes)} routes, {len(tools)} tools",
            "responses and events read": sum(walk.responses.values()),
            "raw": len(walk.findings),
        }
    )
    result.checks.append(Check("raw texts on every route and tool", float(len(walk.findings)), 0.0, unit="texts"))
    result.checks.append(
        Check(
            "routes and tools the walk does not call",
            float(len(unwalked_routes(document)) + len(unwalked_tools(listed))),
            0.0,
            unit="",
        )
    )
    result.details.update(
        seed_s=round(seeded - started, 1),
        walk_s=round(finished - seeded, 1),
        findings=[str(finding) for finding in walk.findings[:20]],
    )
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
