"""POST /api/orc end to end on the embedded defaults: JSON, NDJSON and SSE answers with real citations."""

from __future__ import annotations

import json

import httpx

from tests.http.conftest import settled, upload

LEASE = (
    b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first business day of each month.\n\n"
    b"Either party may end the lease by giving at least 60 days' written notice.\n"
)
HANDBOOK = b"Employee handbook.\n\nNew employees get 25 vacation days per calendar year.\n"


async def test_a_turn_with_attached_documents_answers_with_citations_and_file_ids(client: httpx.AsyncClient) -> None:
    assert (await upload(client, "conv-1", ("lease.txt", LEASE), ("handbook.txt", HANDBOOK))).status_code == 201

    response = await client.post(
        "/api/orc",
        json={
            "question": "How much notice is needed to end the lease?",
            "conversation_id": "conv-1",
            "blob_names": ["lease.txt", "handbook.txt"],
        },
    )

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["conversation_id"] == "conv-1"
    assert "60 days" in body["answer"]
    assert body["citations"], body
    citation = body["citations"][0]
    assert citation["document"] == "lease.txt"
    assert "60 days" in citation["quote"]
    assert citation["ref"] == f"lease.txt::{citation['span_id']}"
    assert sorted(f["blob_name"] for f in body["files"]) == ["handbook.txt", "lease.txt"]
    metadata = body["metadata"]
    assert metadata["tool"] == "document_chat"
    assert metadata["cache"] == "miss"
    assert "offline" in metadata["model"]
    assert metadata["model_calls"] == 1  # the answer; document_chat returns evidence, no planning call


async def test_the_same_documents_again_reuse_the_cached_files(client: httpx.AsyncClient) -> None:
    await upload(client, "conv-2", ("lease.txt", LEASE))
    ask = {"question": "What is the monthly rent?", "conversation_id": "conv-2", "blob_names": ["lease.txt"]}
    first = (await client.post("/api/orc", json=ask)).json()
    second = (await client.post("/api/orc", json={**ask, "question": "And the notice period?"})).json()

    assert first["metadata"]["cache"] == "miss"
    assert second["metadata"]["cache"] == "hit"
    assert second["files"] == first["files"]
    assert second["metadata"]["model_calls"] == 1  # the answer only: no rewrite, no document_chat answer


async def test_ndjson_streams_progress_tool_tokens_citations_then_final(client: httpx.AsyncClient) -> None:
    await upload(client, "conv-3", ("lease.txt", LEASE))
    body = {"question": "What is the monthly rent?", "conversation_id": "conv-3", "blob_names": ["lease.txt"]}
    async with client.stream("POST", "/api/orc", json=body, headers={"Accept": "application/x-ndjson"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/x-ndjson")
        events = [json.loads(line) async for line in response.aiter_lines() if line]

    kinds = [event["type"] for event in events]
    assert kinds[0] == "progress"
    assert "tool" in kinds and "token" in kinds and "citation" in kinds
    assert kinds[-1] == "final"
    assert kinds.index("token") < kinds.index("citation") < kinds.index("final")
    final = events[-1]
    assert "".join(e["text"] for e in events if e["type"] == "token").strip() == final["answer"]
    assert final["usage"] is not None and final["files"]


async def test_server_sent_events_carry_the_same_events(client: httpx.AsyncClient) -> None:
    await upload(client, "conv-4", ("lease.txt", LEASE))
    body = {"question": "What is the monthly rent?", "conversation_id": "conv-4", "blob_names": ["lease.txt"]}
    response = await client.post("/api/orc", json=body, headers={"Accept": "text/event-stream"})

    assert response.headers["content-type"].startswith("text/event-stream")
    blocks = [block for block in response.text.split("\n\n") if block.strip()]
    names = [block.split("\n")[0].removeprefix("event: ") for block in blocks]
    assert names[-1] == "final"
    final = json.loads(blocks[-1].split("\n")[1].removeprefix("data: "))
    assert "1,450" in final["answer"]


async def test_a_question_without_documents_is_answered_without_tools(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/orc", json={"question": "Hello, what can you do?"})

    body = response.json()
    assert response.status_code == 200
    assert body["metadata"]["tool"] is None
    assert body["metadata"]["model_calls"] == 1
    assert body["conversation_id"]


async def test_history_is_listed_read_and_deleted(client: httpx.AsyncClient) -> None:
    await upload(client, "conv-5", ("lease.txt", LEASE))
    await client.post(
        "/api/orc",
        json={"question": "What is the monthly rent?", "conversation_id": "conv-5", "blob_names": ["lease.txt"]},
    )

    sessions = (await client.get("/api/sessions")).json()["sessions"]
    assert [(s["conversation_id"], s["message_count"]) for s in sessions] == [("conv-5", 2)]
    assert sessions[0]["title"] == "Monthly rent"  # titled from the first question

    history = (await client.get("/api/sessions/conv-5")).json()
    user, assistant = history["messages"]
    assert user["role"] == "user" and user["blob_names"] == ["lease.txt"]
    assert assistant["role"] == "assistant" and assistant["citations"]
    assert assistant["last_mcp_tool_used"] == "document_chat"
    assert assistant["uploaded_file_refs"][0]["blob_name"] == "lease.txt"

    assert (await client.delete("/api/sessions/conv-5")).status_code == 204
    assert (await client.get("/api/sessions/conv-5")).status_code == 404
    assert (await client.get("/api/sessions")).json()["sessions"] == []
    assert (await client.get("/api/sessions/conv-5/context")).status_code == 404


async def test_session_files_are_listed_and_removed_with_revisions(client: httpx.AsyncClient) -> None:
    created = (await upload(client, "conv-6", ("lease.txt", LEASE), ("handbook.txt", HANDBOOK))).json()
    assert created["revision"] == 1
    assert [f["diff"] for f in created["files"]] == ["new", "new"]

    again = (await upload(client, "conv-6", ("lease.txt", LEASE))).json()
    assert again["revision"] == 1 and again["files"][0]["diff"] == "unchanged"

    manifest = await settled(client, "conv-6")
    assert [f["filename"] for f in manifest["files"]] == ["lease.txt", "handbook.txt"]
    lease_id = manifest["files"][0]["file_id"]

    removed = (await client.delete(f"/api/sessions/conv-6/context/files/{lease_id}")).json()
    assert removed == {
        "revision": 2,
        "files": [
            {
                "file_id": lease_id,
                "filename": "lease.txt",
                "status": "ready",
                "digest_status": "ready",
                "diff": "deleted",
            }
        ],
        "refused": [],
    }
    assert [f["filename"] for f in (await client.get("/api/sessions/conv-6/context")).json()["files"]] == [
        "handbook.txt"
    ]


async def test_health_reports_the_configured_backends(client: httpx.AsyncClient) -> None:
    body = (await client.get("/api/health")).json()

    assert body["status"] == "ok"
    assert body["storage"] == "embedded"
    assert body["auth"] == "none"
    assert "offline" in body["model"]


async def test_openapi_is_published(client: httpx.AsyncClient) -> None:
    paths = (await client.get("/api/openapi.json")).json()["paths"]

    assert {"/api/orc", "/api/sessions", "/api/sessions/{session_id}", "/api/health"} <= set(paths)
