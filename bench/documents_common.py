"""Shared set-up of the document benchmarks: synthetic text, an embedded runtime, an MCP session, reporting.

Each ``bench/documents_*.py`` module runs on its own (``python -m bench.documents_search``) and reuses the
reporting helpers of :mod:`bench.common` (tables, percentiles, PASS/FAIL lines, machine info).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest

from bench.common import BenchResult, format_checks, format_table, machine_info
from mcp_server.scope import current_principal
from orc.composition import Services, build_runtime
from orc.documents.catalog.library import DocumentLibrary
from orc.principal import LOCAL_PRINCIPAL, Principal
from orc.settings import Settings
from orc.testing import forbid_model_requests

_SYLLABLES = "ka lo mi ra ne su ti po va de fu ri to ma ze li no ba se gu ha we yo ci da".split()


def vocabulary(size: int = 3000, seed: int = 7) -> list[str]:
    """Distinct made-up words (2-4 syllables), so word statistics look like a real corpus's."""
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def paragraph(rng: random.Random, words: Sequence[str], chars: int) -> str:
    """Sentences of Zipf-ish words until about ``chars`` characters."""
    sentences: list[str] = []
    length = 0
    while length < chars:
        count = rng.randint(8, 18)
        # Low ranks are frequent: a realistic mix of common and rare terms.
        chosen = [words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)] for _ in range(count)]
        sentence = " ".join(chosen).capitalize() + "."
        sentences.append(sentence)
        length += len(sentence) + 1
    return " ".join(sentences)


@asynccontextmanager
async def embedded_runtime(**overrides: Any) -> AsyncIterator[Services]:
    """The default embedded process (SQLite file + local folder + offline model) in a temporary ORC_HOME."""
    with tempfile.TemporaryDirectory(prefix="orc-bench-docs-") as home:
        async with build_runtime(Settings(home=Path(home), **overrides)) as runtime:
            yield runtime


def library_of(runtime: Services) -> DocumentLibrary:
    """The runtime's document library."""
    return runtime.documents.library


@asynccontextmanager
async def mcp_session(runtime: Services, principal: Principal = LOCAL_PRINCIPAL) -> AsyncIterator[ClientSession]:
    """An in-memory MCP client session on the runtime's server, acting for ``principal``."""
    token = current_principal.set(principal)
    try:
        async with create_connected_server_and_client_session(runtime.documents.server) as session:
            yield session
    finally:
        current_principal.reset(token)


async def call_tool(session: ClientSession, name: str, arguments: dict[str, Any]) -> CallToolResult:
    """A plain ``tools/call`` request, as the orchestrator's executor sends it (no client-side schema checks)."""
    request = ClientRequest(CallToolRequest(params=CallToolRequestParams(name=name, arguments=arguments)))
    return await session.send_request(request, CallToolResult)


def standalone(
    description: str,
    run: Callable[[argparse.Namespace], Coroutine[Any, Any, BenchResult]],
    configure: Callable[..., None],
) -> Callable[[Sequence[str] | None], int]:
    """A ``main(argv)`` that parses options, runs the benchmark, prints the table and checks, writes JSON."""

    def main(argv: Sequence[str] | None = None) -> int:
        parser = argparse.ArgumentParser(description=description)
        configure(parser)
        parser.add_argument("--output", type=Path, help="also write the results as JSON to this file")
        parser.add_argument("--strict", action="store_true", help="exit with status 1 when a target is missed")
        args = parser.parse_args(argv)
        with forbid_model_requests():  # scripted or offline models only, never a real endpoint
            result = asyncio.run(run(args))
        columns = list(dict.fromkeys(key for row in result.rows for key in row))
        print(f"\n== {result.name} ==")
        print(format_table(result.rows, columns))
        print(format_checks(result.checks))
        if args.output:
            report = {"machine": machine_info(), "result": result.as_dict(), "arguments": vars(args) | {"output": None}}
            args.output.write_text(json.dumps(report, indent=2, default=str))
        return 1 if args.strict and not all(check.passed for check in result.checks) else 0

    return main


def exit_with(main: Callable[[Sequence[str] | None], int]) -> None:
    """``sys.exit(main(sys.argv[1:]))``."""
    sys.exit(main(sys.argv[1:]))
