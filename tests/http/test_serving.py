"""``orc serve``: several worker processes on one port, with TCP_NODELAY on every accepted connection."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from orc.http.serving import YOUNG_GENERATION_THRESHOLD, freeze_after_startup, serve, tcp_listener
from tests.emulators import free_port
from tests.serving import orc_serve, statuses, wait_until_processed


async def test_connections_accepted_on_the_listener_have_tcp_nodelay() -> None:
    listener = tcp_listener("127.0.0.1", 0)
    nodelay: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nodelay.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=listener)
    async with server:
        _, writer = await asyncio.open_connection("127.0.0.1", listener.getsockname()[1])
        # Without it, each response on a kept-alive connection waits for the client's delayed ACK (~40 ms).
        assert await asyncio.wait_for(nodelay, 10) != 0
        writer.close()


def in_collected_generations(thing: object) -> bool:
    return any(candidate is thing for candidate in gc.get_objects())


async def test_objects_alive_once_the_app_has_started_leave_the_collected_generations_and_young_ones_wait_longer() -> (
    None
):
    made_at_startup: list[object] = []
    sent: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "lifespan"
        assert (await receive())["type"] == "lifespan.startup"
        made_at_startup.append([])
        await send({"type": "lifespan.startup.complete"})
        assert (await receive())["type"] == "lifespan.shutdown"
        await send({"type": "lifespan.shutdown.complete"})

    messages = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])

    async def receive() -> Any:
        return next(messages)

    async def send(message: Any) -> None:
        if message["type"] == "lifespan.startup.complete":
            assert not in_collected_generations(made_at_startup[0])
        sent.append(message["type"])

    made_before = []
    assert in_collected_generations(made_before)
    thresholds = gc.get_threshold()
    try:
        await freeze_after_startup(app)({"type": "lifespan"}, receive, send)
        assert gc.get_threshold() == (YOUNG_GENERATION_THRESHOLD, *thresholds[1:])
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


async def test_requests_pass_through_the_freezing_wrapper_untouched() -> None:
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((scope, receive, send))

    async def receive() -> Any:
        return {"type": "http.request"}

    async def send(message: Any) -> None:
        pass

    scope = {"type": "http", "path": "/api/health"}
    frozen_before = gc.get_freeze_count()
    await freeze_after_startup(app)(scope, receive, send)
    assert seen == [(scope, receive, send)]
    assert gc.get_freeze_count() == frozen_before


def test_several_workers_need_an_import_string() -> None:
    with pytest.raises(ValueError, match="import string"):
        serve(object(), host="127.0.0.1", port=free_port(), workers=2)


def worker_processes(pid: int) -> list[int]:
    """The processes ``pid`` spawned with multiprocessing (Linux ``/proc``), not counting its resource tracker."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                # Field 4 of /proc/<pid>/stat is the parent; the name before it is in parentheses.
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if parent == pid and b"spawn_main" in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
    return found


REQUEST_SECONDS = 120.0
"""Bounds a request that hangs; two workers starting on a busy machine answer the first ones slowly."""


SLOW_WORKER_START = """
import time
from pathlib import Path

# Only the server's spawned workers start slowly, as every process does on a host whose cores are busy.
if b"spawn_main" in Path("/proc/self/cmdline").read_bytes():
    time.sleep(7)
"""


def test_orc_serve_with_two_workers_slow_to_start_comes_up_answers_turns_on_one_port_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    # The workers start slower than uvicorn's default 5 s health check, which killed and replaced such workers
    # forever. One server for both points: each start of two workers costs three interpreters' imports.
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "sitecustomize.py").write_text(SLOW_WORKER_START)
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "slow"), *sys.path])}
    with (
        orc_serve(tmp_path / "home", "--workers", "2", env=env) as (base_url, pid),
        httpx.Client(base_url=base_url) as client,
    ):
        workers = worker_processes(pid)
        files = [("files", ("notes.txt", b"The office opens at nine.", "text/plain"))]
        uploaded = client.post("/api/sessions/conv/context/files", files=files, timeout=REQUEST_SECONDS)
        processed = wait_until_processed(base_url, "conv")  # its own answer may say `processing` on a busy machine
        turns = [
            client.post(
                "/api/orc",
                json={"question": "When does the office open?", "conversation_id": "conv", "blob_names": ["notes.txt"]},
                timeout=REQUEST_SECONDS,
            )
            for _ in range(4)
        ]

    assert len(workers) == 2
    assert uploaded.status_code == 201
    assert statuses(processed) == {"notes.txt": "ready"}
    assert [turn.status_code for turn in turns] == [200] * 4
    assert all("nine" in turn.json()["answer"] for turn in turns)
    assert "died" not in (tmp_path / "serve.log").read_text()


def test_orc_serve_says_where_it_listens_and_logs_one_line_per_request(tmp_path: Path) -> None:
    with orc_serve(tmp_path / "home") as (base_url, _), httpx.Client(base_url=base_url) as client:
        assert client.get("/api/health", params={"token": "secret"}).status_code == 200
        assert client.get("/api/nothing-here").status_code == 404

    log = (tmp_path / "serve.log").read_text()
    assert f"orc listening on {base_url}" in log
    assert "GET /api/health 200" in log
    assert "GET /api/nothing-here 404" in log
    assert "secret" not in log


@pytest.mark.parametrize("workers", ["1", "2"])
def test_orc_serve_on_a_port_in_use_says_so_and_never_claims_to_listen(tmp_path: Path, workers: str) -> None:
    taken = tcp_listener("127.0.0.1", 0)
    taken.listen()
    port = taken.getsockname()[1]
    command = [sys.executable, "-c", "import sys; from orc.cli import main; sys.exit(main())"]
    environment = {**os.environ, "ORC_HOME": str(tmp_path / "home"), "ORC_MODEL": "offline"}

    with taken:
        ended = subprocess.run(
            [*command, "serve", "--port", str(port), "--workers", workers],
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert ended.returncode == 1, ended.stderr
    assert f"error (address_in_use): http://127.0.0.1:{port} is taken" in ended.stderr
    assert "listening" not in ended.stderr and "Traceback" not in ended.stderr
