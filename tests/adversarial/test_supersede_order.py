"""Supersede order: after two pauses in one conversation the newer request is the one that can be supplied; the
older one is superseded at once, and each request has its own waiting message id."""

from __future__ import annotations

from typing import Any

import httpx

from tests.http.conftest import open_client, upload

LEASE = b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first day of each month."


async def _paused(client: httpx.AsyncClient, question: str) -> dict[str, Any]:
    body = {"question": question, "conversation_id": "c1", "blob_names": ["lease.txt"], "context_requests": "allow"}
    response = await client.post("/api/orc", json=body)
    assert response.status_code == 200 and response.json()["status"] == "context_required", response.text
    result: dict[str, Any] = response.json()
    return result


async def test_the_newer_of_two_pauses_wins_and_the_older_cannot_be_supplied() -> None:
    async with open_client() as client:
        await upload(client, "c1", ("lease.txt", LEASE))
        older = await _paused(client, "What is the parking fee?")
        newer = await _paused(client, "What is the pet fee?")
        path = "/api/sessions/c1/context-requests/{}/supply"
        late = await client.post(
            path.format(older["request_id"]),
            json={"payloads": [{"slot": older["required"][0]["slot"], "text": "Parking costs 80 euros."}]},
        )
        answered = await client.post(
            path.format(newer["request_id"]),
            json={"payloads": [{"slot": newer["required"][0]["slot"], "text": "Pets cost 20 euros a month."}]},
        )

    assert older["user_message_id"] != newer["user_message_id"]
    assert (late.status_code, late.json()["code"]) == (409, "context_request_superseded")
    assert answered.status_code == 200, answered.text
    assert answered.json()["status"] == "answered" and "20 euros" in answered.json()["answer"]
