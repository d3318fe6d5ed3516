"""Target: ``documents.list`` for an organization focus with 1,000 documents answers with p50 ≤ 50 ms.

Set-up (not timed): the embedded default process (SQLite file + local folder) in a temporary ORC_HOME; an
organization with ``--folders`` folders of ``--usecases`` usecases each, and ``--documents`` small documents
spread round-robin over the organization, its folders and its usecases, uploaded through the real pipeline.
Then ``--calls`` calls, each timed, list every document available to the organization focus (``limit`` =
all of them, so the whole listing is built, serialised and sent):

- through the MCP tool: ``tools/call documents.list`` on a real in-memory MCP client session, as the
  orchestrator's executor sends it (scope validation, the context tree, one catalog query, the listing, the
  text rendering and the MCP round trip);
- through the library call the tool wraps.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from bench.common import BenchResult, Check, summarize
from bench.documents_common import call_tool, embedded_runtime, exit_with, library_of, mcp_session, standalone
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.principal import LOCAL_PRINCIPAL

TARGET_P50_MS = 50.0
BATCH = 20


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--folders", type=int, default=10)
    parser.add_argument("--usecases", type=int, default=4)
    parser.add_argument("--calls", type=int, default=100)


async def run(args: argparse.Namespace) -> BenchResult:
    """Build the tree and documents, then time the listings."""
    organization = ContextRef("organization", LOCAL_PRINCIPAL.organization)
    result = BenchResult(name="documents_list")
    async with embedded_runtime() as runtime:
        library = library_of(runtime)
        contexts = [organization]
        for f in range(args.folders):
            folder = ContextRef("folder", f"folder-{f}")
            await runtime.foundation.directory.put(LOCAL_PRINCIPAL, folder, f"Folder {f}", None)
            contexts.append(folder)
            for u in range(args.usecases):
                usecase = ContextRef("usecase", f"usecase-{f}-{u}")
                await runtime.foundation.directory.put(LOCAL_PRINCIPAL, usecase, f"Usecase {f}.{u}", folder.id)
                contexts.append(usecase)
        per_context: dict[ContextRef, list[Upload]] = {}
        for number in range(args.documents):
            text = f"Document {number} records that item {number} costs {number * 3} euros.\n"
            per_context.setdefault(contexts[number % len(contexts)], []).append(
                Upload(f"doc-{number:04d}.txt", text.encode())
            )
        started = time.perf_counter()
        jobs = []
        for context, uploads in per_context.items():
            for start in range(0, len(uploads), BATCH):
                added = await runtime.foundation.context_documents.add(
                    LOCAL_PRINCIPAL, context, uploads[start : start + BATCH], wait_seconds=0
                )
                jobs.extend(doc.job for doc in added if doc.job is not None)
        await asyncio.gather(*jobs)
        ingest_s = time.perf_counter() - started

        focus = {"context_type": "organization", "context_id": organization.id}
        arguments = {**focus, "limit": 1000}
        scope = await runtime.foundation.scopes.resolve(
            LOCAL_PRINCIPAL, context_type="organization", context_id=organization.id
        )
        async with mcp_session(runtime) as session:
            warm = await call_tool(session, "documents.list", arguments)
            assert not warm.isError and warm.structuredContent is not None
            listed = len(warm.structuredContent["documents"])
            tool_ms = []
            for _ in range(args.calls):
                begin = time.perf_counter()
                response = await call_tool(session, "documents.list", arguments)
                tool_ms.append((time.perf_counter() - begin) * 1000)
                assert not response.isError
        library_ms = []
        for _ in range(args.calls):
            begin = time.perf_counter()
            await library.list_documents(LOCAL_PRINCIPAL, scope, limit=1000)
            library_ms.append((time.perf_counter() - begin) * 1000)

    tool = summarize(tool_ms)
    result.rows = [
        {"path": "MCP tools/call documents.list", "documents": listed, **tool},
        {"path": "library.list_documents", "documents": listed, **summarize(library_ms)},
    ]
    result.checks = [Check(f"documents.list, organization focus, {listed} documents, p50", tool["p50"], TARGET_P50_MS)]
    result.details = {"ingest_seconds": round(ingest_s, 2), "contexts": len(contexts)}
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
