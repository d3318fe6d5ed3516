"""Every entry point that runs a turn goes through the turn policy (issue 25): asked in Python, streamed over HTTP,
resumed by a supply or by run-without, answered at its deadline, answered by MCP ``document_chat``, asked in the
CLI, asked through the Azure Functions entry. On each, a principal whose day of tokens is used up is refused with
the same code, and an admitted turn is charged its tokens and asks its fairness gate before it runs."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcp_server.tools import split_tool_error
from orc.admission import Admitted, Gate, Limits, Operation
from orc.cli.commands import Console
from orc.cli.commands import ask as cli_ask
from orc.composition import Services, in_memory_mcp
from orc.contracts import Usage
from orc.documents.intake.uploads import Upload
from orc.errors import TokenQuotaExceeded
from orc.http import create_app
from orc.http.functions_relay import RelayFunctionApp
from orc.mcp_client import McpToolbox
from orc.principal import LOCAL_PRINCIPAL, Principal
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from orc.tool_contract import DOCUMENT_CHAT
from orc.turns import ContextRequired, TurnRequest, TurnResult
from tests.functions_requests import read, worker_request
from tests.serving import services_of
from tests.support import lifespan

# With ORC_AUTH=none every path (HTTP, MCP in process, the CLI) acts for the local principal.
WHO = LOCAL_PRINCIPAL
DAILY_TOKENS = 1_000_000
LEASE = b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first day of each month."
ASK = {"question": "What is the monthly rent?", "conversation_id": "c1", "blob_names": ["lease.txt"]}
PAUSING = {**ASK, "question": "What is the parking fee?", "context_requests": "allow"}
REFUSED = "token_quota_exceeded"
JSON = {"content-type": "application/json"}


class _CountedGate:
    """The admission's gate, counting how often a node asked it."""

    def __init__(self, gate: Gate, log: RecordingPolicy) -> None:
        self._gate = gate
        self._log = log

    def yielding(self) -> bool:
        self._log.gate_asked += 1
        return self._gate.yielding()

    def step(self) -> AbstractAsyncContextManager[None]:
        return self._gate.step()


class _Recorded:
    def __init__(self, admission: Admitted, log: RecordingPolicy) -> None:
        self._admission = admission
        self._log = log

    @property
    def gate(self) -> Gate | None:
        inner = self._admission.gate
        return _CountedGate(inner, self._log) if inner is not None else None

    async def charge(self, usage: Usage) -> None:
        self._log.charged.append(usage.total_tokens)
        await self._admission.charge(usage)

    def release(self) -> None:
        self._admission.release()

    async def __aenter__(self) -> _Recorded:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()


@dataclass
class RecordingPolicy:
    """The real limits, with a record of the turns that passed through them."""

    quotas: Limits
    admitted: int = 0
    charged: list[int] = field(default_factory=list)
    gate_asked: int = 0
    held: list[str] = field(default_factory=list)

    async def admit(self, principal: Principal, operation: Operation, *, files: int = 0, size: int = 0) -> Admitted:
        admitted = await self.quotas.admit(principal, operation, files=files, size=size)
        if operation != "turn":
            return admitted
        self.admitted += 1
        return _Recorded(admitted, self)

    def refuse_early(self, principal: Principal) -> None:
        self.quotas.refuse_early(principal)

    async def hold_refusal(self, refusal: BaseException) -> None:
        """Refusals are noted and sent at once here."""
        self.held.append(getattr(refusal, "code", type(refusal).__name__))


@dataclass
class Env:
    """One process under a recording policy, and the ways into it."""

    services: Services
    http: httpx.AsyncClient
    functions: Callable[[str, str, bytes], Awaitable[Any]]
    policy: RecordingPolicy

    async def use_up_the_day(self) -> None:
        async with await self.policy.quotas.admit(WHO, "turn") as admitted:
            await admitted.charge(Usage(total_tokens=DAILY_TOKENS))


Outcome = str
"""``answered``, or the refusal's code."""


@asynccontextmanager
async def environment(tmp_path: Path) -> AsyncIterator[Env]:
    settings = Settings(home=tmp_path / "home", storage="embedded", model="offline", context_request_timeout=120)
    quotas = Limits(
        await MemoryCollectionProvider().collection("quotas"), daily_tokens=DAILY_TOKENS, concurrent_turns=8
    )
    policy = RecordingPolicy(quotas)
    app = create_app(settings, admission=policy)
    async with lifespan(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
            services = services_of(app)
            relay = RelayFunctionApp(manager.app)
            handler = relay.get_functions()[0].get_user_function()

            async def functions(method: str, path: str, body: bytes) -> Any:
                request = worker_request(method, f"http://localhost:7071{path}", body=body, headers=JSON)
                return await read(await handler(request))

            await services.foundation.session_files.add(WHO, "c1", [Upload("lease.txt", LEASE)])
            yield Env(services, http, functions, policy)


async def pause(env: Env) -> str:
    paused = await env.services.orchestrator.ask(TurnRequest(**PAUSING), WHO)
    assert isinstance(paused, ContextRequired)
    return paused.request_id


def problem(response: httpx.Response) -> Outcome:
    if response.status_code == 200:
        return "answered"
    assert response.status_code == 429, response.text
    return str(response.json()["code"])


# -- the entry points: each arranges what it needs (before the day is used up), then runs one turn ----------------


async def ask(env: Env, _: str | None, __: pytest.LogCaptureFixture) -> Outcome:
    try:
        result = await env.services.orchestrator.ask(TurnRequest(**ASK), WHO)
    except TokenQuotaExceeded as refusal:
        return refusal.code
    assert isinstance(result, TurnResult)
    return "answered"


async def stream(env: Env, _: str | None, __: pytest.LogCaptureFixture) -> Outcome:
    response = await env.http.post("/api/orc", json=ASK, headers={"Accept": "application/x-ndjson"})
    if response.status_code != 200:
        return problem(response)
    last = json.loads(response.text.splitlines()[-1])
    return "answered" if last["type"] == "final" else str(last["code"])


async def supply(env: Env, request_id: str | None, _: pytest.LogCaptureFixture) -> Outcome:
    payload = {"payloads": [{"slot": "evidence", "text": "Parking costs 80 euros per month."}]}
    return problem(await env.http.post(f"/api/sessions/c1/context-requests/{request_id}/supply", json=payload))


async def run_without(env: Env, request_id: str | None, _: pytest.LogCaptureFixture) -> Outcome:
    return problem(await env.http.post(f"/api/sessions/c1/context-requests/{request_id}/run-without"))


async def expiry(env: Env, _: str | None, caplog: pytest.LogCaptureFixture) -> Outcome:
    answered = await env.services.orchestrator.expire_due(datetime.now(UTC) + timedelta(minutes=3))
    if answered:
        return "answered"
    (stored,) = await env.services.handoff.history(WHO, "c1")
    assert stored["status"] == "pending"  # refused now: the next sweep tries again
    return REFUSED if REFUSED in caplog.text else "not answered"


async def mcp_document_chat(env: Env, _: str | None, __: pytest.LogCaptureFixture) -> Outcome:
    connection = in_memory_mcp(env.services.published_mcp_server)
    try:
        toolbox = McpToolbox(connection, principal=WHO, scope={"session_id": "c1"})
        arguments = {"question": ASK["question"], "document_names": ["lease.txt"], "mode": "answer"}
        outcome = await toolbox.call(DOCUMENT_CHAT, arguments)
    finally:
        await connection.aclose()
    return split_tool_error(outcome.text)[0] if outcome.is_error else "answered"


async def cli(env: Env, _: str | None, __: pytest.LogCaptureFixture) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    ok = await cli_ask(env.services.orchestrator, Console(out, err), TurnRequest(**ASK))
    return "answered" if ok else (REFUSED if REFUSED in err.getvalue() + out.getvalue() else err.getvalue())


async def functions(env: Env, _: str | None, __: pytest.LogCaptureFixture) -> Outcome:
    answer = await env.functions("POST", "/api/orc", json.dumps(ASK).encode())
    if answer.status == 200:
        return "answered"
    assert answer.status == 429
    return str(answer.json()["code"])


Entry = Callable[[Env, str | None, pytest.LogCaptureFixture], Awaitable[Outcome]]
ENTRY_POINTS: dict[str, Entry] = {
    "ask": ask,
    "stream": stream,
    "supply": supply,
    "run-without": run_without,
    "expiry": expiry,
    "mcp-document-chat": mcp_document_chat,
    "cli": cli,
    "functions": functions,
}
RESUMING = {"supply", "run-without", "expiry"}


async def arrange(name: str, env: Env) -> str | None:
    """What the entry point needs before its turn: a paused turn's request, for those that resume one."""
    return await pause(env) if name in RESUMING else None


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
async def test_each_entry_point_refuses_a_principal_over_its_quota_with_the_same_code(
    name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with environment(tmp_path) as env:
        arranged = await arrange(name, env)
        await env.use_up_the_day()
        before = (env.policy.admitted, len(env.policy.charged), env.policy.gate_asked)
        outcome = await ENTRY_POINTS[name](env, arranged, caplog)
        after = (env.policy.admitted, len(env.policy.charged), env.policy.gate_asked)

    assert outcome == REFUSED
    assert after == before  # refused before anything ran: nothing admitted, charged or gated


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
async def test_each_entry_point_admits_charges_and_gates_its_turn(
    name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with environment(tmp_path) as env:
        arranged = await arrange(name, env)
        admitted, charged, asked = env.policy.admitted, len(env.policy.charged), env.policy.gate_asked
        outcome = await ENTRY_POINTS[name](env, arranged, caplog)
        charges = env.policy.charged[charged:]

    assert outcome == "answered"
    assert env.policy.admitted == admitted + 1
    assert len(charges) == 1 and charges[0] > 0
    assert env.policy.gate_asked > asked


async def test_an_mcp_document_chat_refusal_is_held_before_it_is_sent_as_turn_refusals_are(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with environment(tmp_path) as env:
        await env.use_up_the_day()
        outcome = await mcp_document_chat(env, None, caplog)

    assert outcome == REFUSED
    assert env.policy.held == [REFUSED]  # a client calling again at once then calls about once a second
