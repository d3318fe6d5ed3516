"""Extraction fair across organizations, through ``orc serve`` (issue 36): one organization uploads slow PDFs (each
parses for longer than ``ORC_EXTRACTION_SECONDS``), then another uploads a one-page DOCX; how long until the DOCX is
``ready``? Target: within one extraction deadline of its upload, whatever the first organization queued.

Before issue 36 the DOCX waited 53.6 s behind one slow PDF and 104.7 s behind four (ORC_EXTRACTION_SECONDS=60): the
slow organization's documents held both processing slots while they waited for the one worker.

    python -m bench.fair_extraction [--slow 1 4] [--deadline 15] [--cwd /path/to/another/checkout]

``--cwd`` serves the ``orc`` of another checkout (its own code, this bench's client), to measure a before.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.common import free_port, machine_info, temporary_home
from tests.documents.pdf_factory import make_pdf

KEYS = {
    "key-slow": {"organization": "acme", "user": "ann"},
    "key-other": {"organization": "globex", "user": "bob"},
}
START_TIMEOUT = 240.0


@contextlib.contextmanager
def orc_serve(home: Path, deadline: float, cwd: Path | None) -> Iterator[str]:
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("ORC_")}
    env.update(
        {
            "ORC_HOME": str(home),
            "ORC_AUTH": "api-key",
            "ORC_API_KEYS": json.dumps(KEYS),
            "ORC_EXTRACTION_SECONDS": str(deadline),
            "ORC_UPLOAD_RATE": "off",
            "ORC_RATE_LIMIT": "off",
        }
    )
    log = home.parent / "serve.log"
    with log.open("wb") as sink:
        command = [sys.executable, "-c", "from orc.cli import main; main()", "serve", "--port", str(port)]
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT, cwd=cwd)
    base_url = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while True:
            if process.poll() is not None or time.monotonic() - started > START_TIMEOUT:
                raise RuntimeError(f"orc serve did not start:\n{log.read_text(errors='replace')[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base_url}/api/health", timeout=2, trust_env=False).status_code == 200:
                    break
            time.sleep(0.1)  # poll interval, not a wait for readiness
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=60)


def slow_pdf(index: int) -> bytes:
    """About 13 MB and 6,000 pages of text: longer to parse than the bench's deadline on this kind of machine."""
    line = "report {index}, line {line} of page {page}, with a few words"
    return make_pdf([[line.format(index=index, line=n, page=page) for n in range(40)] for page in range(6000)])


def one_page_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("Globex memo: the quarterly review moves to Thursday at ten.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


async def _status(client: httpx.AsyncClient, key: str, organization: str, document_id: str) -> str:
    answer = await client.get(f"/api/contexts/organization/{organization}/documents", headers={"X-API-Key": key})
    answer.raise_for_status()
    for document in answer.json()["documents"]:
        if document["document_id"] == document_id:
            return str(document["status"])
    return "missing"


async def _upload(client: httpx.AsyncClient, key: str, organization: str, name: str, data: bytes) -> dict[str, Any]:
    files = [("files", (name, data, "application/octet-stream"))]
    answer = await client.post(
        f"/api/contexts/organization/{organization}/documents", files=files, headers={"X-API-Key": key}
    )
    answer.raise_for_status()
    document: dict[str, Any] = answer.json()["documents"][0]
    return document


async def one_run(base_url: str, slow: int, deadline: float) -> dict[str, Any]:
    pdfs = [slow_pdf(index) for index in range(slow)]
    memo = one_page_docx()
    async with httpx.AsyncClient(base_url=base_url, timeout=300, trust_env=False) as client:
        queued = await asyncio.gather(
            *(_upload(client, "key-slow", "acme", f"slow-{i}.pdf", pdf) for i, pdf in enumerate(pdfs))
        )
        started = time.monotonic()
        theirs = await _upload(client, "key-other", "globex", "memo.docx", memo)
        status = theirs["status"]
        while status == "processing":
            await asyncio.sleep(0.1)  # poll interval: the bench measures when it became ready, to 0.1 s
            status = await _status(client, "key-other", "globex", theirs["document_id"])
        waited = time.monotonic() - started
        slow_statuses = [await _status(client, "key-slow", "acme", doc["document_id"]) for doc in queued]
    return {
        "slow_documents": slow,
        "other_status": status,
        "other_ready_after_s": round(waited, 1),
        "deadline_s": deadline,
        "slow_still": {state: slow_statuses.count(state) for state in set(slow_statuses)},
        "passes": status == "ready" and waited <= deadline,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.fair_extraction", description=__doc__.split("\n")[0])
    parser.add_argument("--slow", type=int, nargs="+", default=[1, 4], help="slow PDFs the first organization queues")
    parser.add_argument("--deadline", type=float, default=15.0, help="ORC_EXTRACTION_SECONDS for the run")
    parser.add_argument("--cwd", type=Path, help="serve the orc of this checkout")
    args = parser.parse_args()
    results = []
    for slow in args.slow:
        with temporary_home() as home, orc_serve(home, args.deadline, args.cwd) as base_url:
            results.append(asyncio.run(one_run(base_url, slow, args.deadline)))
        print(json.dumps(results[-1]), flush=True)
    print(json.dumps({"machine": machine_info(), "runs": results}, indent=2))


if __name__ == "__main__":
    main()
