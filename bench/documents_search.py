"""Target: ``documents.search`` over 10,000 spans answers with p50 ≤ 20 ms.

Set-up (not timed): the embedded default process (SQLite file + local folder, offline model) in a temporary
ORC_HOME; ``--documents`` documents of ``--spans-per-document`` paragraphs of about 750 characters each (one
span per paragraph; 50 × 200 = 10,000 spans by default), words drawn from a made-up 3,000-word vocabulary with a
Zipf-like distribution, uploaded to the organization through the real pipeline (extraction, spans, stored
text, index). Then ``--queries`` different queries of 2-4 words, each timed:

- through the MCP tool: a real in-memory MCP client session sends ``tools/call documents.search`` with the
  organization as the focus, as the orchestrator's executor sends it (scope validation, availability, index
  lookups, BM25, result rendering, the MCP round trip). For comparison, 50 queries also go through the SDK's
  ``ClientSession.call_tool`` helper, which lists the tools and re-validates the output JSON Schema on the
  client side on every call;
- through the library call the tool wraps (the same minus MCP).

The search engine's index is written by the pipeline; the first search of a new process, and the scale of an
organization of a million spans, are ``bench/search_scale.py``'s.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from bench.common import BenchResult, Check, summarize
from bench.documents_common import (
    call_tool,
    embedded_runtime,
    exit_with,
    library_of,
    mcp_session,
    paragraph,
    standalone,
    vocabulary,
)
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.principal import LOCAL_PRINCIPAL

TARGET_P50_MS = 20.0
ORGANIZATION = ContextRef("organization", LOCAL_PRINCIPAL.organization)
FOCUS = {"context_type": "organization", "context_id": LOCAL_PRINCIPAL.organization}


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--documents", type=int, default=50)
    parser.add_argument("--spans-per-document", type=int, default=200)
    parser.add_argument("--queries", type=int, default=200)


async def run(args: argparse.Namespace) -> BenchResult:
    """Build the corpus, then time the queries."""
    words = vocabulary()
    rng = random.Random(11)
    result = BenchResult(name="documents_search")
    async with embedded_runtime() as runtime:
        library = library_of(runtime)
        started = time.perf_counter()
        jobs = []
        for number in range(args.documents):
            text = "\n\n".join(paragraph(rng, words, 750) for _ in range(args.spans_per_document))
            (doc,) = await runtime.foundation.context_documents.add(
                LOCAL_PRINCIPAL, ORGANIZATION, [Upload(f"doc{number:03d}.txt", text.encode())], wait_seconds=0
            )
            jobs.append(doc.job)
        await asyncio.gather(*(job for job in jobs if job is not None))
        ingest_s = time.perf_counter() - started
        records = await runtime.foundation.context_documents.documents(LOCAL_PRINCIPAL, ORGANIZATION)
        spans = sum(record.span_count or 0 for record in records)
        queries = [" ".join(rng.sample(words[:1500], rng.randint(2, 4))) for _ in range(args.queries)]
        scope = await runtime.foundation.scopes.resolve(
            LOCAL_PRINCIPAL, context_type="organization", context_id="default"
        )

        async with mcp_session(runtime) as session:
            await call_tool(session, "documents.search", {"query": queries[0], **FOCUS})  # warm-up
            tool_ms, hits = [], 0
            for query in queries:
                begin = time.perf_counter()
                response = await call_tool(session, "documents.search", {"query": query, **FOCUS})
                tool_ms.append((time.perf_counter() - begin) * 1000)
                assert not response.isError and response.structuredContent is not None
                hits += bool(response.structuredContent["results"])
            helper_ms = []
            for query in queries[:50]:
                begin = time.perf_counter()
                await session.call_tool("documents.search", {"query": query, **FOCUS})
                helper_ms.append((time.perf_counter() - begin) * 1000)
        library_ms = []
        for query in queries:
            begin = time.perf_counter()
            await library.search(LOCAL_PRINCIPAL, scope, query)
            library_ms.append((time.perf_counter() - begin) * 1000)

    tool = summarize(tool_ms)
    result.rows = [
        {"path": "MCP tools/call documents.search", "spans": spans, **tool},
        {"path": "MCP ClientSession.call_tool", "spans": spans, **summarize(helper_ms)},
        {"path": "library.search", "spans": spans, **summarize(library_ms)},
    ]
    result.checks = [Check(f"documents.search over {spans} spans, p50", tool["p50"], TARGET_P50_MS)]
    result.details = {"ingest_seconds": round(ingest_s, 2), "queries_with_results": hits, "documents": len(records)}
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
