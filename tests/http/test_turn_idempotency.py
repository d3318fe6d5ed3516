"""POST /api/orc with an Idempotency-Key runs the turn once; a retry gets the first answer."""

from __future__ import annotations

import json

import httpx

from tests.http.conftest import upload

ASK = {"question": "What is the monthly rent?", "conversation_id": "idem", "blob_names": ["lease.txt"]}


async def stored_messages(client: httpx.AsyncClient) -> int:
    return len((await client.get("/api/sessions/idem")).json()["messages"])


async def test_a_retried_turn_is_answered_from_the_first_run_and_stored_once(client: httpx.AsyncClient) -> None:
    await upload(client, "idem", ("lease.txt", b"The monthly rent is 1,450 euros."))
    headers = {"Idempotency-Key": "turn-1"}

    first = await client.post("/api/orc", json=ASK, headers=headers)
    again = await client.post("/api/orc", json=ASK, headers=headers)

    assert first.status_code == again.status_code == 200
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert again.json() == first.json()
    assert await stored_messages(client) == 2


async def test_the_same_key_with_another_question_is_refused(client: httpx.AsyncClient) -> None:
    await upload(client, "idem", ("lease.txt", b"The monthly rent is 1,450 euros."))
    headers = {"Idempotency-Key": "turn-2"}
    assert (await client.post("/api/orc", json=ASK, headers=headers)).status_code == 200

    response = await client.post("/api/orc", json={**ASK, "question": "Something else?"}, headers=headers)

    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    assert await stored_messages(client) == 2


async def test_a_streamed_turn_is_recorded_and_a_retry_gets_its_result_as_json(client: httpx.AsyncClient) -> None:
    await upload(client, "idem", ("lease.txt", b"The monthly rent is 1,450 euros."))
    headers = {"Idempotency-Key": "turn-3", "Accept": "application/x-ndjson"}

    streamed = await client.post("/api/orc", json=ASK, headers=headers)
    final = [json.loads(line) for line in streamed.text.splitlines() if line][-1]
    again = await client.post("/api/orc", json=ASK, headers=headers)

    assert final["type"] == "final"
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["answer"] == final["answer"]
    assert again.json()["files"] == final["files"]
    assert await stored_messages(client) == 2


async def test_without_a_key_every_request_is_a_new_turn(client: httpx.AsyncClient) -> None:
    await upload(client, "idem", ("lease.txt", b"The monthly rent is 1,450 euros."))
    await client.post("/api/orc", json=ASK)
    await client.post("/api/orc", json=ASK)

    assert await stored_messages(client) == 4
