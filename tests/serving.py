"""``orc serve`` in a process of its own, for the tests that need a real server (HTTP, the page, MCP clients)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from orc.composition import Services
from tests.emulators import free_port

PROCESSED_SECONDS = 240.0
"""A bound for processing that never ends, not a wait: the stream ends as soon as nothing is being processed."""
START_SECONDS = 240.0
"""A bound for a server that hangs before it listens, not a readiness wait: the loop ends as soon as the server
answers or its process dies, so a loaded machine only makes it slower. The per-test timeout still applies."""


@contextlib.contextmanager
def orc_serve(home: Path, *arguments: str, env: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """Run ``orc serve`` in a process group of its own until it answers /api/health; yield its URL and process
    id, then stop it."""
    port = free_port()
    environment = {**os.environ, "ORC_HOME": str(home), "ORC_MODEL": "offline", **(env or {})}
    command = [sys.executable, "-c", "import sys; from orc.cli import main; sys.exit(main())"]
    log = home.parent / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, "serve", "--port", str(port), *arguments],
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            assert process.poll() is None, log.read_text(errors="replace")[-2000:]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base_url}/api/health", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "orc serve did not answer in time"
            time.sleep(0.1)  # poll interval, not a wait for readiness
        yield base_url, process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


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


def services_of(app: Any) -> Services:
    """The running app's services, found through the middleware that wraps the FastAPI app."""
    while not hasattr(getattr(app, "state", None), "services"):
        app = getattr(app, "app", None) or app.api
    services: Services = app.state.services
    return services
