"""Consumption: one principal cannot take the service from others — request rate, daily tokens and concurrent
turns are limited per principal, counted in the store (so every instance agrees), refused with 429, a stable code
and ``Retry-After``; and none of it applies to the single local user of ``ORC_AUTH=none``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orc.admission import Limits, RateLimit
from orc.contracts import Usage
from orc.errors import RateLimited, TokenQuotaExceeded, TooManyConcurrentTurns
from orc.http.app import stream_bounds
from orc.http.auth import authenticator_for
from orc.http.route_table import RouteTable
from orc.http.stream_limits import StreamLimits
from orc.principal import Principal
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from tests.http.conftest import open_client
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, RunningEndpoint, serve

KEYS = {
    "key-flood": {"organization": "acme", "user": "flooder"},
    "key-calm": {"organization": "acme", "user": "calm"},
}
ALICE = Principal(organization="acme", user="alice")
BOB = Principal(organization="acme", user="bob")


def api_key_settings(**limits: object) -> Settings:
    return Settings(auth="api-key", api_keys=json.dumps(KEYS), **limits)  # type: ignore[arg-type]


def turn(key: str) -> dict[str, object]:
    return {"json": {"question": "What is the rent?"}, "headers": {"X-API-Key": key}}


async def test_a_principal_over_its_rate_limit_gets_429_rate_limited_while_others_go_on() -> None:
    async with open_client(api_key_settings(rate_limit="2/hour")) as client:
        accepted = [await client.post("/api/orc", **turn("key-flood")) for _ in range(2)]  # type: ignore[arg-type]
        refused = await client.post("/api/orc", **turn("key-flood"))  # type: ignore[arg-type]
        other = await client.post("/api/orc", **turn("key-calm"))  # type: ignore[arg-type]

    assert [response.status_code for response in accepted] == [200, 200]
    assert refused.status_code == 429
    assert refused.json()["code"] == "rate_limited"
    assert 1 <= int(refused.headers["retry-after"]) <= 3600
    assert other.status_code == 200


async def test_the_rate_is_counted_in_the_store_so_a_second_instance_refuses_too() -> None:
    settings = api_key_settings(rate_limit="2/day")
    async with open_client(settings) as first:
        for _ in range(2):
            assert (await first.post("/api/orc", **turn("key-flood"))).status_code == 200  # type: ignore[arg-type]
    async with open_client(settings) as second:
        refused = await second.post("/api/orc", **turn("key-flood"))  # type: ignore[arg-type]

    assert refused.status_code == 429
    assert refused.json()["code"] == "rate_limited"


async def test_the_single_local_user_of_auth_none_has_no_rate_limit() -> None:
    async with open_client(Settings(rate_limit="1/hour", max_concurrent_turns=1)) as client:
        statuses = [
            (await client.post("/api/orc", json={"question": "What is the rent?"})).status_code for _ in range(3)
        ]

    assert statuses == [200, 200, 200]


@pytest.fixture(scope="module")
def running() -> Iterator[RunningEndpoint]:
    yield from serve(OpenAIEndpoint())


async def test_a_principal_whose_tokens_today_reach_the_quota_gets_429_token_quota_exceeded(
    running: RunningEndpoint,
) -> None:
    running.endpoint.reset(*[Reply(text="The rent is $1,850.")] * 4)
    settings = api_key_settings(
        model="openai:test-model", model_base_url=running.base_url, token_quota_daily=10, rate_limit="off"
    )
    async with open_client(settings) as client:
        first = await client.post("/api/orc", **turn("key-flood"))  # type: ignore[arg-type]
        refused = await client.post("/api/orc", **turn("key-flood"))  # type: ignore[arg-type]
        other = await client.post("/api/orc", **turn("key-calm"))  # type: ignore[arg-type]

    assert first.status_code == 200 and first.json()["metadata"]["usage"]["total_tokens"] > 10
    assert refused.status_code == 429
    assert refused.json()["code"] == "token_quota_exceeded"
    assert int(refused.headers["retry-after"]) <= 86400
    assert other.status_code == 200


async def quotas(**limits: object) -> Limits:
    collection = await MemoryCollectionProvider().collection("quotas")
    return Limits(collection, **limits)  # type: ignore[arg-type]


async def one_turn(limits: Limits, principal: Principal, tokens: int = 0) -> None:
    """One admitted turn that used ``tokens``."""
    async with await limits.admit(principal, "turn") as admitted:
        await admitted.charge(Usage(total_tokens=tokens))


async def test_a_window_that_ends_admits_the_principal_again() -> None:
    now = [1_000_000.0]
    limits = await quotas(turn_rate=RateLimit.parse("1/minute"), clock=lambda: now[0])

    await one_turn(limits, ALICE)
    with pytest.raises(RateLimited) as refused:
        await one_turn(limits, ALICE)
    now[0] += refused.value.retry_after

    await one_turn(limits, ALICE)


async def test_tokens_are_charged_after_the_turn_and_checked_before_the_next() -> None:
    limits = await quotas(daily_tokens=100)
    await one_turn(limits, ALICE, 60)
    await one_turn(limits, ALICE, 60)

    with pytest.raises(TokenQuotaExceeded):
        await one_turn(limits, ALICE)
    await one_turn(limits, BOB)


async def test_a_principal_at_its_concurrent_turn_cap_is_refused_at_once_and_others_are_not() -> None:
    limits = await quotas(concurrent_turns=2)
    first, second = limits.turn_slot(ALICE), limits.turn_slot(ALICE)

    with pytest.raises(TooManyConcurrentTurns):
        limits.turn_slot(ALICE)
    with limits.turn_slot(BOB):
        pass
    first.release()
    first.release()  # releasing twice frees one slot only
    with limits.turn_slot(ALICE), pytest.raises(TooManyConcurrentTurns):
        limits.turn_slot(ALICE)
    second.release()


@pytest.mark.parametrize("text", ["20/hour", "1/second", "5 / minute", "100/day"])
def test_rate_limits_are_read_in_every_window(text: str) -> None:
    assert RateLimit.parse(text) is not None


@pytest.mark.parametrize("text", ["20", "20/week", "0/hour", "-1/day", "x/hour"])
def test_a_malformed_rate_limit_is_a_configuration_error(text: str) -> None:
    with pytest.raises(ValueError):
        Settings(rate_limit=text)


class HeldStream:
    """An ASGI app whose streams start and then stay open, silent, until released."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        self.started.set()
        await self.release.wait()
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def stream_scope(key: str) -> Scope:
    return {"type": "http", "method": "GET", "path": "/api/mcp", "headers": [(b"x-api-key", key.encode())]}


async def call(app: StreamLimits, scope: Scope) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def stream_limits(app: ASGIApp, **settings: float) -> StreamLimits:
    """The stream limits of the app built with ``settings``."""
    authenticator = authenticator_for(api_key_settings())
    return StreamLimits(app, authenticator, stream_bounds(Settings(**settings)), RouteTable())  # type: ignore[arg-type]


class ChattyStream:
    """An ASGI app whose stream sends data every few milliseconds and never ends by itself."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        while True:
            await send({"type": "http.response.body", "body": b"data: tick\n\n", "more_body": True})
            await asyncio.sleep(0.005)


async def test_a_principal_over_its_open_streams_gets_429_too_many_streams_while_others_open_theirs() -> None:
    held = HeldStream()
    limits = stream_limits(held, max_streams_per_principal=1, max_streams=10)
    first = asyncio.create_task(call(limits, stream_scope("key-flood")))
    await held.started.wait()

    refused = await call(limits, stream_scope("key-flood"))
    held.release.set()
    other = await call(limits, stream_scope("key-calm"))
    await first

    assert refused[0]["status"] == 429
    assert json.loads(refused[1]["body"])["code"] == "too_many_streams"
    assert other[0]["status"] == 200
    assert limits.open == {} and limits.total == 0


async def test_a_silent_stream_is_ended_after_the_idle_timeout() -> None:
    limits = stream_limits(HeldStream(), stream_idle_seconds=0.05, stream_max_seconds=60)

    sent = await call(limits, stream_scope("key-flood"))

    assert sent[0]["status"] == 200
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert limits.total == 0


async def test_a_stream_that_keeps_sending_is_ended_after_the_longest_a_stream_is_kept() -> None:
    limits = stream_limits(ChattyStream(), stream_idle_seconds=60, stream_max_seconds=0.1)

    async with asyncio.timeout(120):  # bounds a stream that is never ended
        sent = await call(limits, stream_scope("key-flood"))

    assert sent[0]["status"] == 200
    assert any(message.get("body") == b"data: tick\n\n" for message in sent)
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert limits.total == 0
