"""GET /api/sessions/{id}/artifacts: what a user can supply to a context request, paged, in the caller's scope."""

from __future__ import annotations

import json
from typing import Any

import httpx

from orc.settings import Settings
from tests.digests.support import digest_model
from tests.http.conftest import open_client, settled, upload

LEASE = b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first day of each month."
HANDBOOK = b"Employee handbook.\n\nNew employees get 25 vacation days per calendar year."
POLICY = b"Parking policy.\n\nParking costs 80 euros per month."
KEYS = {"key-a": {"organization": "acme", "user": "a"}, "key-b": {"organization": "acme", "user": "b"}}


async def a_session_with_files_a_focus_and_two_answers(client: httpx.AsyncClient) -> None:
    assert (await client.put("/api/contexts/folder/legal", json={"name": "Legal"})).status_code == 201
    parts = [("files", ("policy.txt", POLICY, "text/plain"))]
    assert (await client.post("/api/contexts/folder/legal/documents", files=parts)).status_code in (200, 201, 202)
    assert (await upload(client, "s", ("lease.txt", LEASE), ("handbook.txt", HANDBOOK))).status_code == 201
    await settled(client, "s")
    for question in ("What is the monthly rent?", "How many vacation days do new employees get?"):
        turn = {"question": question, "conversation_id": "s", "context": {"type": "folder", "id": "legal"}}
        response = await client.post("/api/orc", json=turn)
        assert response.status_code == 200, response.text


async def everything(client: httpx.AsyncClient, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        response = await client.get("/api/sessions/s/artifacts", params=query)
        assert response.status_code == 200, response.text
        page = response.json()
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            assert page["total"] == len(items)
            return items


async def test_a_session_offers_its_files_its_focus_documents_its_digest_facts_and_its_answers() -> None:
    async with open_client(Settings(), digest_model=digest_model()) as client:
        await a_session_with_files_a_focus_and_two_answers(client)
        items = await everything(client)

    kinds = [item["kind"] for item in items]
    assert kinds == sorted(kinds, key=["document", "fact", "answer"].index)  # documents, then facts, then answers
    documents = {item["title"]: item for item in items if item["kind"] == "document"}
    assert set(documents) == {"lease.txt", "handbook.txt", "policy.txt"}
    assert documents["lease.txt"]["context"] == "session" and documents["policy.txt"]["context"] == "folder legal"
    assert all(
        item["supply"] == {"document_id": item["id"].removeprefix("document:"), "source_ref": None, "text": None}
        for item in documents.values()
    )
    facts = [item for item in items if item["kind"] == "fact"]
    assert facts and all(
        item["source_refs"] and item["supply"]["source_ref"] == item["source_refs"][0] for item in facts
    )
    # Each point says which files it comes from, in words (not "from the session's digest").
    for fact in facts:
        files = dict.fromkeys(ref.split("::")[0] for ref in fact["source_refs"])
        assert fact["detail"].startswith("from ") and all(name in fact["detail"] for name in files), fact
    answers = [item for item in items if item["kind"] == "answer"]
    assert [item["title"] for item in answers] == [
        "How many vacation days do new employees get?",  # newest first
        "What is the monthly rent?",
    ]
    assert "25" in answers[0]["supply"]["text"] and answers[0]["id"] == "answer:msg-2-assistant"


async def test_pages_walk_every_artifact_once_and_a_kind_narrows_the_listing() -> None:
    async with open_client(Settings(), digest_model=digest_model()) as client:
        await a_session_with_files_a_focus_and_two_answers(client)
        whole = await everything(client)
        one_by_one = await everything(client, limit=1)
        answers = await everything(client, kind="answer")

    assert [item["id"] for item in one_by_one] == [item["id"] for item in whole]
    assert len({item["id"] for item in whole}) == len(whole)
    assert [item["id"] for item in answers] == [item["id"] for item in whole if item["kind"] == "answer"]


async def test_another_users_session_and_an_unknown_one_are_not_found() -> None:
    async with open_client(Settings(auth="api-key", api_keys=json.dumps(KEYS))) as client:
        turn = {"question": "Hello?", "conversation_id": "mine"}
        assert (await client.post("/api/orc", json=turn, headers={"X-API-Key": "key-a"})).status_code == 200
        own = await client.get("/api/sessions/mine/artifacts", headers={"X-API-Key": "key-a"})
        foreign = await client.get("/api/sessions/mine/artifacts", headers={"X-API-Key": "key-b"})
        unknown = await client.get("/api/sessions/nobody/artifacts", headers={"X-API-Key": "key-a"})

    assert own.status_code == 200 and [item["kind"] for item in own.json()["items"]] == ["answer"]
    assert (foreign.status_code, foreign.json()["code"]) == (404, "session_not_found")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "session_not_found")


async def test_bad_paging_arguments_are_refused_with_stable_codes() -> None:
    async with open_client() as client:
        assert (await client.post("/api/orc", json={"question": "Hello?", "conversation_id": "s"})).status_code == 200
        forged = await client.get("/api/sessions/s/artifacts", params={"cursor": "not-a-cursor"})
        negative = await client.get("/api/sessions/s/artifacts", params={"cursor": "eyJvIjogLTF9"})
        too_many = await client.get("/api/sessions/s/artifacts", params={"limit": 1000})
        bad_kind = await client.get("/api/sessions/s/artifacts", params={"kind": "secrets"})
        bad_id = await client.get("/api/sessions/..%2F..%2Fetc/artifacts")

    assert (forged.status_code, forged.json()["code"]) == (400, "invalid_cursor")
    assert (negative.status_code, negative.json()["code"]) == (400, "invalid_cursor")
    assert (too_many.status_code, too_many.json()["code"]) == (422, "validation_error")
    assert (bad_kind.status_code, bad_kind.json()["code"]) == (422, "validation_error")
    assert bad_id.status_code in (400, 404)
