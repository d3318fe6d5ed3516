"""Model faults × answer formats: every failure of the model provider is a coded error within the turn's deadline,
nothing is stored, and the same turn succeeds once the provider is back."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from orc.settings import Settings
from tests.http.conftest import open_client, upload
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, RunningEndpoint, serve

FAULTS: dict[str, tuple[Reply, int, str]] = {
    "throttled": (Reply(status=429, headers={"retry-after": "7"}), 503, "model_unavailable"),
    "failing": (Reply(status=500), 503, "model_unavailable"),
    "bad key": (Reply(status=401, text="Incorrect API key provided: sk-secret-123"), 502, "model_misconfigured"),
    "context too long": (Reply(status=400, code="context_length_exceeded"), 413, "context_too_long"),
    "hang": (Reply(fault="hang"), 504, "model_timeout"),
    "cut stream": (Reply(fault="cut"), 503, "model_unavailable"),
}
FORMATS = {"json": "application/json", "ndjson": "application/x-ndjson", "sse": "text/event-stream"}
ANSWER = "The rent is due on the first of the month."


@pytest.fixture(scope="module")
def running() -> Iterator[RunningEndpoint]:
    yield from serve(OpenAIEndpoint())


HUNG_TURN_SECONDS = 1.0
"""The turn deadline of the client that meets a hung model: what ends that turn."""
TURN_SECONDS = 120.0
"""The turn deadline everywhere else: a fault must be coded by what the model answered, not by a busy machine's
turn outliving a 1 s deadline (a 504 instead of the fault's code)."""


def settings_for(running: RunningEndpoint, turn_timeout: float = TURN_SECONDS) -> Settings:
    return Settings(
        model="openai:test-model",
        model_base_url=running.base_url,
        model_max_retries=0,
        model_timeout_seconds=30,
        turn_timeout=turn_timeout,
    )


def last_event(response: httpx.Response, fmt: str) -> dict[str, Any]:
    if fmt == "ndjson":
        lines = [line for line in response.text.splitlines() if line.strip()]
        event: dict[str, Any] = json.loads(lines[-1])
        return event
    blocks = [block for block in response.text.split("\n\n") if block.strip()]
    data = next(line for line in blocks[-1].split("\n") if line.startswith("data: "))
    event = json.loads(data.removeprefix("data: "))
    return event


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fault", FAULTS)
async def test_a_model_fault_is_a_coded_error_nothing_is_stored_and_a_retry_succeeds(
    running: RunningEndpoint, fault: str, fmt: str
) -> None:
    reply, status, code = FAULTS[fault]
    running.endpoint.reset(reply)
    conversation = str(uuid.uuid4())
    turn = {"question": "When is the rent due?", "conversation_id": conversation}
    deadline = HUNG_TURN_SECONDS if fault == "hang" else TURN_SECONDS
    async with open_client(settings_for(running, deadline)) as client:
        failed = await client.post("/api/orc", json=turn, headers={"Accept": FORMATS[fmt]})

        if fmt == "json":
            assert failed.status_code == status, failed.text
            assert failed.json()["code"] == code
            if status in (503, 504):
                assert int(failed.headers["retry-after"]) >= 1
        else:
            assert failed.status_code == 200
            event = last_event(failed, fmt)
            assert (event["type"], event["code"], event["status"]) == ("error", code, status)
        assert "sk-secret" not in failed.text
        assert (await client.get(f"/api/sessions/{conversation}")).status_code == 404

    running.endpoint.reset(*[Reply(text=ANSWER)] * 4)
    async with open_client(settings_for(running)) as client:  # the same home, under the usual deadline
        retried = await client.post("/api/orc", json=turn)
        assert retried.status_code == 200, retried.text
        assert ANSWER in retried.json()["answer"]


async def test_the_throttled_models_retry_after_reaches_the_caller(running: RunningEndpoint) -> None:
    running.endpoint.reset(Reply(status=429, headers={"retry-after": "7"}))
    async with open_client(settings_for(running)) as client:
        failed = await client.post("/api/orc", json={"question": "When is the rent due?"})

    assert failed.status_code == 503
    assert failed.headers["retry-after"] == "7"


@pytest.mark.parametrize("fault", ["throttled", "bad key", "context too long"])
async def test_a_model_fault_in_a_turn_about_attached_documents_is_coded_too(
    running: RunningEndpoint, fault: str
) -> None:
    reply, status, code = FAULTS[fault]
    async with open_client(settings_for(running)) as client:
        assert (await upload(client, "docs", ("lease.txt", b"The monthly rent is 1,450 euros."))).status_code == 201
        running.endpoint.reset(reply, reply, reply)
        failed = await client.post(
            "/api/orc", json={"question": "What is the rent?", "conversation_id": "docs", "blob_names": ["lease.txt"]}
        )

    assert failed.status_code == status, failed.text
    assert failed.json()["code"] == code
