"""``orc serve`` in a process of its own, for the tests that need a real server (HTTP, the page, MCP clients)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.emulators import free_port

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
