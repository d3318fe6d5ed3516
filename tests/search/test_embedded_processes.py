"""The embedded engine is one index for every process on the machine: what one process writes, the next search of
another finds, and two processes writing at once both land (``orc serve --workers 2`` beside ``orc worker``)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from orc.search.embedded import EmbeddedSearchEngine
from orc.search.port import SearchFilter, SearchRequest
from orc.testing.conformance.search import document

WRITER = """
import asyncio, json, sys
from pathlib import Path
from orc.search.embedded import EmbeddedSearchEngine
from orc.testing.conformance.search import document

async def main() -> None:
    root, document_id, version, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    engine = EmbeddedSearchEngine(Path(root))
    texts = [f"rent clause {n} of {document_id}" for n in range(count)]
    await asyncio.gather(*(engine.upsert(document(f"{document_id}-{n}", texts, version=version)) for n in range(3)))
    await engine.aclose()
    print(json.dumps({"written": document_id}))

asyncio.run(main())
"""


async def write_in_another_process(root: Path, document_id: str, version: str, count: int) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        WRITER,
        str(root),
        document_id,
        version,
        str(count),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert json.loads(out) == {"written": document_id}


def rent(limit: int = 100) -> SearchRequest:
    return SearchRequest(SearchFilter("acme"), limit, terms={"rent": 1.0})


async def test_a_document_another_process_replaces_is_what_the_next_search_here_finds(tmp_path: Path) -> None:
    engine = EmbeddedSearchEngine(tmp_path)
    await engine.upsert(document("lease-0", ["rent is 900 euros"], version="old"))
    assert [hit.version for hit in await engine.search(rent())] == ["old"]

    await write_in_another_process(tmp_path, "lease", "new", 2)
    found = await engine.search(rent())
    await engine.aclose()

    assert {(hit.document_id, hit.version) for hit in found} == {(f"lease-{n}", "new") for n in range(3)}
    assert len(found) == 6


async def test_processes_writing_at_the_same_time_all_land(tmp_path: Path) -> None:
    await asyncio.gather(*(write_in_another_process(tmp_path, f"doc{n}", "v1", 4) for n in range(3)))

    engine = EmbeddedSearchEngine(tmp_path)
    found = await engine.search(rent())
    entries = await engine.entries("acme", [f"doc{n}-{m}" for n in range(3) for m in range(3)])
    await engine.aclose()

    assert len(found) == 36
    assert len(entries) == 9 and {entry.spans for entry in entries.values()} == {4}
