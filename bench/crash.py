"""Target (issue 14): kill -9 during 20 concurrent turns and 3 large uploads, ×10 — no half turn, every
acknowledged write readable, no document stuck in ``processing`` after restart + 60 s.

Each iteration starts ``python -m bench.server`` (embedded storage: SQLite + local folder in one ``ORC_HOME``,
the scripted model with ``--latency`` seconds per call, so turns are in flight when the kill comes), starts 3
uploads of a large text document (each to a conversation of its own) and up to 20 turns on fresh conversations,
spread so that about 15 are sent before the kill, and SIGKILLs the server's process group ``--kill-after``
seconds after the first request (0.5 s later in each iteration, so the kill finds the work at different stages:
uploads being written, acknowledged and processing, turns answered and in flight): no shutdown code runs. Then a new
server on the same ``ORC_HOME``:

- every turn the client saw answered (200) is in its conversation, question and answer;
- no conversation holds a half turn (a question without its answer);
- every upload the client saw acknowledged (201) is listed, and within 60 s no document of any upload is
  ``uploading`` or ``processing``: the restarted process resumes or fails what the kill interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.common import BenchResult, Check, ServerOptions, loopback_client, serve_in_subprocess, temporary_home
from bench.documents_common import exit_with, standalone

SETTLE_SECONDS = 60.0
TURNS_BEFORE_KILL = 15
"""Turns are spread so that about this many are sent before the kill (some answered, some in flight); the rest
meet a dead server."""
KILL_STEP = 0.5
"""Each iteration kills a little later than the one before, so the kill finds the work at different stages."""
TURNS = 20
UPLOADS = 3


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.3, help="seconds per model call")
    parser.add_argument(
        "--kill-after", type=float, default=0.5, help="seconds from the first request to the kill (first iteration)"
    )
    parser.add_argument("--upload-mb", type=float, default=4.0, help="size of each uploaded document")


def big_document(megabytes: float, seed: str) -> bytes:
    """A text document of about ``megabytes`` MB, different for each ``seed``."""
    line = f"Clause {{n}} of {seed}: the tenant keeps the garden tidy and pays the rent on time.\n\n"
    count = int(megabytes * 1024 * 1024 / len(line))
    return "".join(line.format(n=n) for n in range(count)).encode()


async def _turn(client: httpx.AsyncClient, conversation: str) -> int:
    with contextlib.suppress(httpx.HTTPError):
        response = await client.post(
            "/api/orc", json={"question": "What is the rent?", "conversation_id": conversation}
        )
        return response.status_code
    return 0  # cut by the kill


async def _upload(client: httpx.AsyncClient, conversation: str, data: bytes) -> int:
    with contextlib.suppress(httpx.HTTPError):
        response = await client.post(
            f"/api/sessions/{conversation}/context/files", files={"files": ("big.txt", data, "text/plain")}
        )
        return response.status_code
    return 0


async def _files(client: httpx.AsyncClient, conversation: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/sessions/{conversation}/context")
    if response.status_code == 404:
        return []
    response.raise_for_status()
    files: list[dict[str, Any]] = response.json().get("files", [])
    return files


async def iteration(home: Path, args: argparse.Namespace, documents: list[bytes], kill_after: float) -> dict[str, Any]:
    """One kill and restart; what was acknowledged, and what the restarted server shows."""
    options = ServerOptions(latency=args.latency)
    turns = [f"turn-{uuid.uuid4().hex[:8]}" for _ in range(TURNS)]
    uploads = [f"upload-{uuid.uuid4().hex[:8]}" for _ in range(UPLOADS)]
    async with (
        serve_in_subprocess(home, options) as server,
        loopback_client(server.base_url, connections=TURNS + UPLOADS + 2) as client,
    ):
        work = [asyncio.create_task(_upload(client, c, d)) for c, d in zip(uploads, documents, strict=True)]
        started = time.monotonic()
        for conversation in turns:
            # Spread over the kill: some turns answered, some in flight, some not begun.
            work.append(asyncio.create_task(_turn(client, conversation)))
            await asyncio.sleep(kill_after / TURNS_BEFORE_KILL)
            if time.monotonic() - started >= kill_after:
                break
        await asyncio.sleep(max(0.0, kill_after - (time.monotonic() - started)))
        os.killpg(server.pid, signal.SIGKILL)  # the process group: the server and its extraction worker
        statuses = await asyncio.gather(*work)
    upload_statuses, turn_statuses = statuses[:UPLOADS], statuses[UPLOADS:]
    sent = turns[: len(turn_statuses)]
    acknowledged_turns = [c for c, s in zip(sent, turn_statuses, strict=True) if s == 200]
    acknowledged_uploads = [c for c, s in zip(uploads, upload_statuses, strict=True) if s == 201]
    async with (
        serve_in_subprocess(home, options) as server,
        loopback_client(server.base_url, connections=4) as client,
    ):
        lost_turns, half_turns = 0, 0
        for conversation in turns:
            response = await client.get(f"/api/sessions/{conversation}")
            messages = response.json().get("messages", []) if response.status_code == 200 else []
            roles = [message["role"] for message in messages]
            if conversation in acknowledged_turns and roles[:2] != ["user", "assistant"]:
                lost_turns += 1
            if roles.count("user") != roles.count("assistant"):
                half_turns += 1
        lost_uploads = 0
        for conversation in acknowledged_uploads:
            if not await _files(client, conversation):
                lost_uploads += 1
        started = time.monotonic()
        stuck: list[str] = []
        while True:
            stuck = [
                f"{conversation}: {file['status']}"
                for conversation in uploads
                for file in await _files(client, conversation)
                if file["status"] in ("uploading", "processing")
            ]
            if not stuck or time.monotonic() - started > SETTLE_SECONDS:
                break
            await asyncio.sleep(0.5)
        settled_s = time.monotonic() - started
    return {
        "turns_answered_before_kill": len(acknowledged_turns),
        "uploads_acknowledged_before_kill": len(acknowledged_uploads),
        "lost_turns": lost_turns,
        "half_turns": half_turns,
        "lost_uploads": lost_uploads,
        "stuck_after_60s": len(stuck),
        "settled_s": round(settled_s, 1),
    }


async def run(args: argparse.Namespace) -> BenchResult:
    """``--iterations`` kills, each on a fresh ``ORC_HOME``."""
    result = BenchResult(name="crash")
    documents = [big_document(args.upload_mb, f"document {n}") for n in range(UPLOADS)]
    for number in range(args.iterations):
        with temporary_home() as home:
            kill_after = args.kill_after + KILL_STEP * number
            row = await iteration(home, args, documents, kill_after)
        result.rows.append({"iteration": number + 1, "kill_after_s": round(kill_after, 2), **row})
    totals = {key: sum(row[key] for row in result.rows) for key in ("lost_turns", "half_turns", "lost_uploads")}
    stuck = sum(row["stuck_after_60s"] for row in result.rows)
    result.checks.append(Check("acknowledged turns lost", float(totals["lost_turns"]), 0.0, unit="turns"))
    result.checks.append(Check("half turns", float(totals["half_turns"]), 0.0, unit="turns"))
    result.checks.append(Check("acknowledged uploads lost", float(totals["lost_uploads"]), 0.0, unit="uploads"))
    result.checks.append(Check("documents still processing 60 s after restart", float(stuck), 0.0, unit="docs"))
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
