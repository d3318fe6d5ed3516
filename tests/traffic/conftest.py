"""The real-traffic suite's shared parts: the generated documents (made once per test process) and ``orc serve``
waited on through its own readiness signals."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.serving import orc_serve
from tests.traffic.documents import Document, Kind, generate
from tests.web.conftest import browser, page, server  # noqa: F401  (the page's fixtures, for test_page_traffic)

PROCESSED_SECONDS = 240.0
"""A bound for processing that never ends, not a wait: the stream ends as soon as nothing is being processed."""
SERVERS = {"httptools": ("--http", "httptools"), "h11": ("--http", "h11"), "workers-2": ("--workers", "2")}


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[Kind, int], Document]:
    """One PDF, DOCX and XLSX file of 1, 5 and 20 MB, written once for the whole run."""
    return generate(tmp_path_factory.mktemp("generated"))


@pytest.fixture(scope="module", params=list(SERVERS))
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``orc serve`` as people start it (the offline model, default limits), under each HTTP parser and with two
    worker processes; its base URL."""
    home = tmp_path_factory.mktemp(f"traffic-{request.param}") / "home"
    with orc_serve(home, *SERVERS[request.param]) as (url, _):
        yield url


def wait_until_processed(base_url: str, session_id: str) -> dict[str, Any]:
    """Follow the session's status stream (``GET …/context/stream``) until it says nothing is being processed;
    then the manifest. A readiness signal, not a poll: the stream ends when processing ends."""
    url = f"{base_url}/api/sessions/{session_id}/context/stream"
    deadline = time.monotonic() + PROCESSED_SECONDS
    with httpx.Client(timeout=PROCESSED_SECONDS) as client:
        while True:
            with client.stream("GET", url) as response:
                assert response.status_code == 200, response.read()
                event = ""
                for line in response.iter_lines():
                    if line.startswith("event:"):
                        event = line.partition(":")[2].strip()
                    if event == "done" and line.startswith("data:"):
                        break
            manifest = client.get(f"{base_url}/api/sessions/{session_id}/context").json()
            if all(file["status"] not in ("uploading", "processing") for file in manifest["files"]):
                return dict(manifest)
            # With digests off the stream follows nothing and ends at once: poll the manifest then.
            assert time.monotonic() < deadline, json.dumps(manifest)[:2000]
            time.sleep(0.2)  # poll interval, not a wait for processing


def statuses(manifest: dict[str, Any]) -> dict[str, str]:
    return {file["filename"]: file["status"] for file in manifest["files"]}
