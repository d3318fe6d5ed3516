"""A caller who floods gives way to everyone else: once this process refuses a principal, that principal's admitted
turns wait at their yield points (before each graph node) while other callers' turns run, for a bounded time, and
its early refusals are held a moment before they are sent (issue 14 §2, the flood target of ``bench.flood``)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from orc.admission import Fairness, Limits, RateLimit
from orc.composition import build_runtime
from orc.errors import TooManyConcurrentTurns, TooManyRequests, Unauthenticated
from orc.principal import Principal
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from orc.turns import TurnRequest, TurnResult
from tests.http.conftest import open_client

FLOODER = Principal(organization="acme", user="flooder")
CALM = Principal(organization="acme", user="calm")


def limits(clock: Callable[[], float] = time.time, **bounds: float) -> Limits:
    return Limits(None, concurrent_turns=1, fairness=Fairness(clock, **bounds))  # type: ignore[arg-type]


def refused(quotas: Limits, principal: Principal) -> None:
    with pytest.raises(TooManyConcurrentTurns):
        quotas.turn_slot(principal)


async def test_a_caller_that_was_never_refused_never_gives_way() -> None:
    quotas = limits()
    mine = quotas.turn_slot(FLOODER)
    with quotas.turn_slot(CALM):
        assert not mine.yielding()


async def test_a_refused_callers_turn_gives_way_only_while_another_callers_turn_runs() -> None:
    quotas = limits()
    mine = quotas.turn_slot(FLOODER)
    refused(quotas, FLOODER)
    async with asyncio.timeout(5), mine.step():  # alone: nobody to give way to, the step runs at once
        pass

    calm = quotas.turn_slot(CALM)
    entered = asyncio.Event()

    async def step() -> None:
        async with mine.step():
            entered.set()

    task = asyncio.create_task(step())
    for _ in range(20):  # every chance to run: it must still be waiting
        await asyncio.sleep(0)
    assert mine.yielding() and not entered.is_set()

    calm.release()
    await asyncio.wait_for(task, 30)
    assert entered.is_set()


async def test_a_flooding_turn_also_gives_way_just_after_another_callers_turn_ends_then_goes_on() -> None:
    # A caller asking one question after another is between two turns, not gone: anticipate its next one.
    quotas = limits(anticipation_seconds=0.2)
    mine = quotas.turn_slot(FLOODER)
    refused(quotas, FLOODER)
    quotas.turn_slot(CALM).release()
    entered = asyncio.Event()

    async def step() -> None:
        async with mine.step():
            entered.set()

    task = asyncio.create_task(step())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not entered.is_set()  # the calm caller finished a turn just now

    await asyncio.wait_for(task, 30)  # and once it has not come back for a moment, the flooder goes on


async def test_nothing_is_remembered_of_callers_between_turns_while_nobody_floods() -> None:
    quotas = limits()
    for number in range(1_000):
        quotas.turn_slot(Principal(organization="acme", user=f"user-{number}")).release()

    fairness = quotas._fairness
    assert not fairness._anticipated and not fairness._refused_at and not fairness.running


async def test_a_released_slot_never_yields_and_flooding_ends_when_refusals_stop() -> None:
    now = [1_000.0]
    quotas = limits(lambda: now[0], flooding_seconds=5)
    mine = quotas.turn_slot(FLOODER)
    refused(quotas, FLOODER)
    with quotas.turn_slot(CALM):
        assert mine.yielding()
        now[0] += 6
        assert not mine.yielding()
        mine.release()
        assert not mine.yielding()


async def test_refusals_that_no_longer_matter_are_forgotten_once_many_callers_were_refused() -> None:
    now = [1_000.0]
    quotas = limits(lambda: now[0], flooding_seconds=5)
    for number in range(4_096):  # a process that met many callers, each refused once
        caller = Principal(organization="acme", user=f"user-{number}")
        quotas.turn_slot(caller)
        refused(quotas, caller)
    now[0] += 6
    latest = quotas.turn_slot(FLOODER)
    refused(quotas, FLOODER)

    assert len(quotas._fairness._refused_at) == 1  # the latest refusal only
    with quotas.turn_slot(CALM):
        assert latest.yielding()


async def test_a_flooding_turn_waits_at_most_the_bound_even_while_others_keep_running() -> None:
    quotas = limits(max_yield_seconds=0.05)
    mine = quotas.turn_slot(FLOODER)
    refused(quotas, FLOODER)
    with quotas.turn_slot(CALM):
        async with asyncio.timeout(5):
            async with mine.step():
                pass


async def test_early_refusals_are_held_up_to_the_bound_and_beyond_the_count_sent_at_once() -> None:
    quotas = limits(refusal_hold_seconds=30, max_held_refusals=2)
    refusal = TooManyConcurrentTurns("busy", retry_after=30)
    held = [asyncio.create_task(quotas.hold_refusal(refusal)) for _ in range(2)]
    for _ in range(5):
        await asyncio.sleep(0)

    async with asyncio.timeout(5):
        await quotas.hold_refusal(refusal)  # the third is not held
        await quotas.hold_refusal(Unauthenticated("no key"))  # and a 401 never is
    assert not any(task.done() for task in held)
    for task in held:
        task.cancel()
    await asyncio.gather(*held, return_exceptions=True)
    assert quotas._fairness._held == 0


async def test_a_flooders_turn_through_the_graph_waits_for_the_calm_callers_turn(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home", model="offline", storage="embedded", auth="none")
    quotas = Limits(None, concurrent_turns=2, fairness=Fairness(max_yield_seconds=60))
    async with build_runtime(settings, admission=quotas) as orc:
        await orc.orchestrator.ask(TurnRequest(question="Warm up?"))  # imports and first-use caches
        flooding = [quotas.turn_slot(FLOODER), quotas.turn_slot(FLOODER)]
        refused(quotas, FLOODER)  # the flooder is refused once: it floods
        flooding.pop().release()
        calm_slot = quotas.turn_slot(CALM)  # a calm caller's turn runs meanwhile

        async def flooder_turn() -> TurnResult:
            # Admitted by the policy like any turn: its slot is its gate, carried in the runtime context.
            result = await orc.orchestrator.ask(TurnRequest(question="What is the rent?"), FLOODER)
            assert isinstance(result, TurnResult)
            return result

        flooder = asyncio.create_task(flooder_turn())
        for question in ("Hello?", "What is the rent?", "Thanks!"):  # three whole turns meanwhile
            assert isinstance(await orc.orchestrator.ask(TurnRequest(question=question), CALM), TurnResult)
        assert not flooder.done()  # held at its first node while the calm caller's turns ran

        calm_slot.release()
        answered = await asyncio.wait_for(flooder, 30)
        flooding.pop().release()

    assert answered.answer


async def test_an_early_refusal_over_http_is_held_about_a_second_and_keeps_its_code() -> None:
    keys = json.dumps({"key-flood": {"organization": "acme", "user": "flooder"}})
    async with open_client(Settings(auth="api-key", api_keys=keys, rate_limit="1/hour")) as client:
        request = {"json": {"question": "Hello?"}, "headers": {"X-API-Key": "key-flood"}}
        assert (await client.post("/api/orc", **request)).status_code == 200  # type: ignore[arg-type]
        assert (await client.post("/api/orc", **request)).status_code == 429  # type: ignore[arg-type]
        started = time.monotonic()
        early = await client.post("/api/orc", **request)  # type: ignore[arg-type]
        held = time.monotonic() - started

    assert early.status_code == 429 and early.json()["code"] == "rate_limited"
    assert int(early.headers["retry-after"]) >= 1
    assert held >= 0.9  # the window is known to be full: answered before the route, after the hold


@pytest.mark.parametrize("route", ["supply", "run-without"])
async def test_a_resumption_from_a_caller_known_to_be_over_its_window_is_refused_before_its_body_is_read(
    route: str,
) -> None:
    keys = json.dumps({"key-flood": {"organization": "acme", "user": "flooder"}})
    settings = Settings(auth="api-key", api_keys=keys, rate_limit="1/hour")
    async with open_client(settings) as client:
        turn = {"json": {"question": "Hello?"}, "headers": {"X-API-Key": "key-flood"}}
        assert (await client.post("/api/orc", **turn)).status_code == 200  # type: ignore[arg-type]
        assert (await client.post("/api/orc", **turn)).status_code == 429  # type: ignore[arg-type]
        # A file orc cannot read: parsed by the route, it would be refused 415, after a multipart read.
        refused = await client.post(
            f"/api/sessions/s1/context-requests/req-1/{route}",
            data={"slot": "evidence"},
            files={"files": ("blob.bin", b"\x00\x01\x02binary", "application/octet-stream")},
            headers={"X-API-Key": "key-flood"},
        )

    assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"


async def test_a_refused_uploaders_admitted_upload_waits_while_another_callers_turn_runs() -> None:
    quotas = Limits(
        await MemoryCollectionProvider().collection("quotas"),
        upload_rate=RateLimit.parse("100/hour"),
        concurrent_uploads=1,
        concurrent_turns=1,
        fairness=Fairness(max_yield_seconds=30, refusal_hold_seconds=0),
    )
    async with asyncio.timeout(5), await quotas.admit(FLOODER, "upload", files=1, size=10):  # never refused
        with pytest.raises(TooManyRequests):
            async with await quotas.admit(FLOODER, "upload", files=1, size=10):  # over its concurrent uploads
                pass

    calm = quotas.turn_slot(CALM)
    entered = asyncio.Event()

    async def upload() -> None:
        async with await quotas.admit(FLOODER, "upload", files=1, size=10):
            entered.set()

    task = asyncio.create_task(upload())
    for _ in range(20):  # every chance to run: it must still be waiting for the calm caller's turn
        await asyncio.sleep(0)
    assert not entered.is_set()

    calm.release()
    await asyncio.wait_for(task, 30)
    assert entered.is_set()
