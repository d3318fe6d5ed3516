"""Storage faults surface as 503 with Retry-After (or an error event), never as a half-stored turn."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from orc.composition import Stores
from orc.conversations import ConversationRepository, Turn
from orc.errors import ETagMismatch, ItemAlreadyExists, StorageUnavailable
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from tests.http.conftest import open_client, upload
from tests.support import CallCounter, counting_stores

ASK = {"question": "What is the rent?", "conversation_id": "conv", "blob_names": ["lease.txt"]}


@pytest.fixture
async def faulty() -> AsyncIterator[tuple[httpx.AsyncClient, CallCounter, Stores]]:
    stores, counter = counting_stores()
    async with open_client(Settings(), stores=stores) as client:
        assert (await upload(client, "conv", ("lease.txt", b"The monthly rent is 900 euros."))).status_code == 201
        yield client, counter, stores


async def stored_turns(stores: Stores) -> list[Turn]:
    collection = await stores.collections.collection("conversations")
    return await ConversationRepository(collection).turns(LOCAL_PRINCIPAL, "conv")


async def test_a_storage_outage_while_storing_the_turn_is_a_503_with_retry_after_and_stores_nothing(
    faulty: tuple[httpx.AsyncClient, CallCounter, Stores],
) -> None:
    client, counter, stores = faulty
    counter.fail("conversations.create", StorageUnavailable("storage is unreachable"))

    response = await client.post("/api/orc", json=ASK)

    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert response.json()["code"] == "storage_unavailable"
    assert await stored_turns(stores) == []


async def test_throttling_beyond_the_retry_budget_passes_the_backends_hint_on(
    faulty: tuple[httpx.AsyncClient, CallCounter, Stores],
) -> None:
    client, counter, _ = faulty
    counter.fail("conversations.query", StorageUnavailable("throttled (429)", retry_after=2.2))

    response = await client.post("/api/orc", json=ASK)

    assert response.status_code == 503
    assert response.headers["retry-after"] == "3"
    assert "Traceback" not in response.text


async def test_a_stream_that_fails_ends_with_an_error_event_and_nothing_is_stored(
    faulty: tuple[httpx.AsyncClient, CallCounter, Stores],
) -> None:
    client, counter, stores = faulty
    counter.fail("conversations.create", StorageUnavailable("storage is unreachable"))

    response = await client.post("/api/orc", json=ASK, headers={"Accept": "application/x-ndjson"})

    events = [json.loads(line) for line in response.text.splitlines() if line]
    assert events[-1]["type"] == "error"
    assert events[-1]["code"] == "storage_unavailable"
    assert events[-1]["retry_after"] == 1
    assert not any(event["type"] == "final" for event in events)
    assert await stored_turns(stores) == []


async def test_losing_header_races_is_retried_and_the_turn_is_stored_once(
    faulty: tuple[httpx.AsyncClient, CallCounter, Stores],
) -> None:
    client, counter, stores = faulty
    assert (await client.post("/api/orc", json=ASK)).status_code == 200
    counter.fail("conversations.replace", ETagMismatch("another writer won"), times=3)

    response = await client.post("/api/orc", json={**ASK, "question": "And the rent again?"})

    assert response.status_code == 200
    assert [turn.seq for turn in await stored_turns(stores)] == [1, 2]
    sessions = (await client.get("/api/sessions")).json()["sessions"]
    assert sessions[0]["message_count"] == 4


async def test_losing_every_race_for_a_turn_number_is_a_503_and_stores_nothing(
    faulty: tuple[httpx.AsyncClient, CallCounter, Stores],
) -> None:
    client, counter, stores = faulty
    counter.fail("conversations.create", ItemAlreadyExists("taken"))

    response = await client.post("/api/orc", json=ASK)

    assert response.status_code == 503
    assert "retry-after" in response.headers
    assert await stored_turns(stores) == []
