"""One organization floods a costly operation while another organization does warm turns (issue 25 item 4):
uploads, exports, turns over MCP (``document_chat``) and supplies to paused turns.

The harness of ``bench.flood`` (its server, calm caller, flooder process and alternated windows): ``orc serve``
(one worker, embedded storage, the offline model, ``ORC_AUTH=api-key``) in a process of its own; the calm caller
(organization ``globex``) posts ``calm_turns`` turns one after the other, in ``rounds`` pairs of windows, alone and
then while a flooder process (organization ``acme``, a fresh principal each round so that every round's flood has
its admitted share, not only refusals) runs the operation with ``flood_concurrency`` in flight.

- ``uploads``: each request uploads a 3-page PDF to a fresh session (parsed in the extraction worker, then
  digested), under the default upload window (``ORC_UPLOAD_RATE=300/hour``, 4 uploads at once per principal);
- ``uploads-no-limits``: the same with ``ORC_UPLOAD_RATE=off`` (how orc was before issue 25);
- ``exports``: each request exports the flooder's 300-turn conversation (about 200,000 characters) as a PDF, 4 in
  flight, under ``ORC_EXPORT_RATE=60/hour``;
- ``mcp``: each request calls ``document_chat`` (answer mode, a model call) through a real MCP client session over
  streamable HTTP (``/api/mcp``) on a document of the flooder's session, 50 calls in flight over 4 sessions, under
  the turn quotas (``ORC_RATE_LIMIT=120/minute``, ``ORC_MAX_CONCURRENT_TURNS=4``): refusals come back as tool
  errors with the quota's code;
- ``supply``: 20 conversations with a lease attached, each with a turn paused for context (a question the lease
  cannot answer, ``"context_requests": "allow"``); each request supplies a one-page PDF to a paused turn as
  multipart (parsed in the extraction worker; the turn resumes and answers), or pauses a new turn once the last
  was answered, under the same turn quotas and upload window (a refused supply leaves its request pending).

Target: the calm organization's p95 under flood ≤ 2× its idle p95 (medians over the rounds).

    python -m bench.flood_ops [--rows uploads exports mcp supply] [--rounds 3] [--calm-turns 40]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.common import SAMPLE_DOCS, temporary_home
from bench.flood import MAX_ROUNDS, alternate, calm_keys, calm_turns, flood_until_stopped, orc_serve
from mcp_server.tools import split_tool_error
from orc.clock import utc_now
from orc.composition import build_runtime
from orc.conversations.models import AssistantMessage, UserMessage
from orc.principal import Principal
from orc.settings import Settings
from tests.documents.pdf_factory import make_pdf

KEYS = {
    **calm_keys("globex"),
    **{f"key-flood-{n}": {"organization": "acme", "user": f"flood-{n}"} for n in range(MAX_ROUNDS)},
}
# The calm caller's turns stay under the turn rate; everything else is the defaults a deployment gets.
COMMON = {"ORC_API_KEYS": json.dumps(KEYS), "ORC_RATE_LIMIT": "120/minute"}
ROWS: dict[str, dict[str, str]] = {
    "uploads": {**COMMON},
    "uploads-no-limits": {**COMMON, "ORC_UPLOAD_RATE": "off"},
    "exports": {**COMMON},
    "mcp": {**COMMON},
    "supply": {**COMMON},
}
FLOODS = {
    "uploads": (3000, 50),
    "uploads-no-limits": (3000, 50),
    "exports": (40, 4),
    "mcp": (3000, 50),
    "supply": (3000, 20),
}
"""Each row's default flood per round: at most this many requests (it stops with the calm window), and how many
in flight."""
EXPORTED = "long-conversation"
EXPORT_TURNS = 300
PDF = make_pdf(
    [[f"Clause {page}.{line}: the tenant pays the rent monthly." for line in range(30)] for page in range(3)]
)
SUPPLIED = make_pdf([["Parking for a second car costs 40 euros per month."]])
UNANSWERABLE = "What is the parking fee for the second car?"
"""A question the lease does not answer: with ``"context_requests": "allow"`` the turn pauses for context."""
MCP_SESSIONS = 4
LEASE = ("lease.txt", SAMPLE_DOCS["lease.txt"], "text/plain")


async def upload(
    session: aiohttp.ClientSession,
    base_url: str,
    key: str,
    file: tuple[str, bytes, str] = ("lease.pdf", PDF, "application/pdf"),
    conversation: str | None = None,
) -> int:
    """One upload of ``file`` to ``conversation`` (a fresh session by default) of ``key``; its status."""
    form = aiohttp.FormData()
    form.add_field("files", file[1], filename=file[0], content_type=file[2])
    url = f"{base_url}/api/sessions/{conversation or uuid.uuid4().hex}/context/files"
    async with session.post(url, data=form, headers={"X-API-Key": key}) as response:
        await response.read()
        return response.status


async def export(session: aiohttp.ClientSession, base_url: str, key: str) -> int:
    """One PDF export of the flooder's long conversation; its status."""
    url = f"{base_url}/api/sessions/{EXPORTED}/export?format=pdf"
    async with session.get(url, headers={"X-API-Key": key}) as response:
        await response.read()
        return response.status


async def store_long_conversation(home: Path, users: int) -> None:
    """The 300-turn conversation of each flooder principal, written to the server's store before it starts."""
    answer = "The notice period is 60 days [lease.txt::S1]. " * 14  # about 650 characters, as real answers run
    settings = Settings(home=home, auth="api-key", api_keys=json.dumps(KEYS))
    async with build_runtime(settings) as services:
        for number in range(users):
            principal = Principal(organization="acme", user=f"flood-{number}")
            for seq in range(EXPORT_TURNS):
                await services.foundation.conversations.append_turn(
                    principal,
                    EXPORTED,
                    UserMessage(content=f"Question {seq}: what is the notice period?", created_at=utc_now()),
                    AssistantMessage(content=answer, created_at=utc_now()),
                )


@contextlib.asynccontextmanager
async def mcp_session(base_url: str, key: str) -> AsyncIterator[ClientSession]:
    """A real MCP client session over streamable HTTP to the server's ``/api/mcp``, initialized."""
    http = httpx.AsyncClient(headers={"X-API-Key": key}, timeout=300, trust_env=False)
    async with (
        http,
        streamable_http_client(f"{base_url}/api/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def document_chat(session: ClientSession, conversation: str) -> str:
    """One ``document_chat`` answer over MCP; ``ok`` or the tool error's code."""
    result = await session.call_tool(
        "document_chat",
        {"question": "What is the monthly rent?", "document_names": ["lease.txt"], "session_id": conversation},
    )
    if not result.isError:
        return "ok"
    text = " ".join(getattr(block, "text", "") for block in result.content)
    return split_tool_error(text)[0]


async def outcome(step: str, response: aiohttp.ClientResponse) -> str:
    """``step status`` and, for a refusal, its code."""
    if response.status < 400:
        await response.read()
        return f"{step} {response.status}"
    problem = await response.json(content_type=None)
    return f"{step} {response.status} {problem.get('code')}"


async def pause(session: aiohttp.ClientSession, base_url: str, key: str, conversation: str) -> str | tuple[str, str]:
    """Ask what the session's lease cannot answer with ``"context_requests": "allow"``: the paused turn's request
    id and slot, or the outcome when it did not pause."""
    body = {
        "question": UNANSWERABLE,
        "conversation_id": conversation,
        "blob_names": ["lease.txt"],
        "context_requests": "allow",
    }
    async with session.post(f"{base_url}/api/orc", json=body, headers={"X-API-Key": key}) as response:
        if response.status != 200:
            return await outcome("pause", response)
        paused = await response.json(content_type=None)
    if paused.get("status") != "context_required":
        return "pause answered"
    return paused["request_id"], paused["required"][0]["slot"]


async def supply(
    session: aiohttp.ClientSession, base_url: str, key: str, conversation: str, request: tuple[str, str]
) -> str:
    """Supply a one-page PDF to the paused turn's request as multipart; the outcome."""
    form = aiohttp.FormData()
    form.add_field("slot", request[1])
    form.add_field("files", SUPPLIED, filename="parking.pdf", content_type="application/pdf")
    url = f"{base_url}/api/sessions/{conversation}/context-requests/{request[0]}/supply"
    async with session.post(url, data=form, headers={"X-API-Key": key}) as response:
        return await outcome("supply", response)


class Supplier:
    """The supply flood's lanes: one conversation each (the lease attached), whose paused turn is supplied, then a
    new turn paused, and so on; a refused supply leaves the request pending and is tried again."""

    def __init__(self, session: aiohttp.ClientSession, base_url: str, key: str) -> None:
        self._session = session
        self._base_url = base_url
        self._key = key
        self._lanes = asyncio.Queue[tuple[str, str | tuple[str, str]]]()

    async def set_up(self, lanes: int) -> None:
        """Attach the lease to each lane's conversation and pause its first turn (before the flood)."""
        for number in range(lanes):
            conversation = f"flood-supply-{number}"
            await upload(self._session, self._base_url, self._key, LEASE, conversation)
            self._lanes.put_nowait((conversation, await pause(self._session, self._base_url, self._key, conversation)))

    async def step(self) -> str:
        """One request of a lane: supply its paused turn, or pause a new one."""
        conversation, pending = await self._lanes.get()
        try:
            if isinstance(pending, str):  # no paused turn: pause one
                pending = await pause(self._session, self._base_url, self._key, conversation)
                return pending if isinstance(pending, str) else "pause 200"
            result = await supply(self._session, self._base_url, self._key, conversation, pending)
            if result == "supply 200":
                pending = result
            return result
        finally:
            self._lanes.put_nowait((conversation, pending))


async def flood_only(base_url: str, row: str, key: str, requests: int, concurrency: int) -> dict[str, int]:
    """The flooder process: set up, say it is starting, flood until told to stop, return the outcomes."""
    connector = aiohttp.TCPConnector(limit=concurrency + 8)
    timeout = aiohttp.ClientTimeout(total=300)
    async with (
        aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session,
        contextlib.AsyncExitStack() as stack,
    ):
        operation: Callable[[], Awaitable[int | str]]
        if row in ("uploads", "uploads-no-limits"):
            operation = lambda: upload(session, base_url, key)  # noqa: E731
        elif row == "exports":
            operation = lambda: export(session, base_url, key)  # noqa: E731
        elif row == "mcp":
            conversation = "flood-mcp"
            await upload(session, base_url, key, LEASE, conversation)
            # A client session holds a notification stream open, and a principal may hold 8: the calls in flight
            # share 4 sessions (a session carries concurrent requests).
            clients = [await stack.enter_async_context(mcp_session(base_url, key)) for _ in range(MCP_SESSIONS)]
            calls = itertools.count()

            async def call() -> str:
                return await document_chat(clients[next(calls) % MCP_SESSIONS], conversation)

            operation = call
        else:
            supplier = Supplier(session, base_url, key)
            await supplier.set_up(concurrency)
            operation = supplier.step
        print("flooding", flush=True)
        outcomes = await flood_until_stopped(operation, requests, concurrency)
    return dict(sorted(outcomes.items()))


async def run_row(name: str, calm: int, seconds: float, rounds: int, requests: int, concurrency: int) -> dict[str, Any]:
    """One row: a server, then ``rounds`` idle and flooded windows of calm turns."""
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ValueError(f"--rounds must be 1 to {MAX_ROUNDS}")
    with temporary_home() as home:
        if name == "exports":
            await store_long_conversation(home, rounds)
        with orc_serve(home, ROWS[name]) as base_url:
            connector = aiohttp.TCPConnector(limit=8)
            timeout = aiohttp.ClientTimeout(total=300)
            async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:
                # Starts the extraction worker (not part of what is measured), as another principal.
                await upload(session, base_url, f"key-flood-{MAX_ROUNDS - 1}")
                await calm_turns(session, base_url, 5)

                def flooder(number: int) -> tuple[str, list[str]]:
                    arguments = ["--rows", name, "--key", f"key-flood-{number}"]
                    arguments += ["--flood-requests", str(requests), "--flood-concurrency", str(concurrency)]
                    return "bench.flood_ops", arguments

                row = await alternate(session, base_url, calm, seconds, rounds, flooder, wait=600)
    return {"row": name, **row}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calm-turns", type=int, default=40, help="per window")
    parser.add_argument("--window-seconds", type=float, default=3.0, help="the shortest calm window")
    parser.add_argument("--rounds", type=int, default=3, help="idle and flooded windows, alternated")
    parser.add_argument("--flood-requests", type=int, help="at most, per round (default: the row's)")
    parser.add_argument("--flood-concurrency", type=int, help="default: the row's")
    parser.add_argument("--rows", nargs="*", default=["uploads"], choices=list(ROWS))
    parser.add_argument("--flood-only", metavar="URL", help="be the flooder process of a run (internal)")
    parser.add_argument("--key", default="key-flood-0", help="the flooder's API key (internal)")
    args = parser.parse_args()
    for name in args.rows:
        requests = args.flood_requests or FLOODS[name][0]
        concurrency = args.flood_concurrency or FLOODS[name][1]
        if args.flood_only:
            print(json.dumps(asyncio.run(flood_only(args.flood_only, name, args.key, requests, concurrency))))
            return
        row = asyncio.run(run_row(name, args.calm_turns, args.window_seconds, args.rounds, requests, concurrency))
        print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
