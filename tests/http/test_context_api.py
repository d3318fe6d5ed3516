"""The context-files API contract: Idempotency-Key, If-Match, status codes of bad requests, the status stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from orc.composition import Stores
from orc.settings import ApiKeyPrincipal, Settings
from orc.storage.memory import MemoryCollectionProvider
from orc.testing import FunctionChatModel
from tests.digests.support import digest_model, task_a_files
from tests.documents.gates import GatedBlobStore
from tests.http.conftest import open_client, settled, upload

LEASE = b"The monthly rent is 1,450 euros, payable on the first day of each month."
NOTES = b"The deposit is 2,900 euros and is returned within 30 days."


@pytest.fixture
async def api() -> AsyncIterator[tuple[httpx.AsyncClient, FunctionChatModel]]:
    model = digest_model()
    async with open_client(Settings(), digest_model=model) as client:
        yield client, model


def problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert body["code"] == code
    return body


async def test_a_replayed_idempotency_key_answers_the_first_response_without_running_again(
    api: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, model = api
    key = {"Idempotency-Key": "upload-1"}
    first = await upload(client, "s", ("lease.txt", LEASE), headers=key)
    await settled(client, "s")
    calls = model.calls

    replay = await upload(client, "s", ("lease.txt", LEASE), headers=key)

    assert first.status_code == replay.status_code == 201
    assert replay.json() == first.json() and replay.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert model.calls == calls
    assert (await client.get("/api/sessions/s/context")).json()["revision"] == 1


async def test_the_same_key_with_a_different_request_is_422(api: tuple[httpx.AsyncClient, FunctionChatModel]) -> None:
    client, _ = api
    key = {"Idempotency-Key": "k"}
    await upload(client, "s", ("lease.txt", LEASE), headers=key)

    other_content = await upload(client, "s", ("lease.txt", NOTES), headers=key)
    other_session = await upload(client, "t", ("lease.txt", LEASE), headers=key)

    problem(other_content, 422, "idempotency_key_reused")
    problem(other_session, 422, "idempotency_key_reused")


async def test_the_same_key_while_the_first_request_runs_is_409() -> None:
    blobs = GatedBlobStore()
    stores = Stores(collections=MemoryCollectionProvider(), blobs=blobs)
    async with open_client(Settings(), stores=stores, digest_model=digest_model()) as client:
        blobs.puts.close()
        key = {"Idempotency-Key": "slow"}
        first = asyncio.create_task(upload(client, "s", ("lease.txt", LEASE), headers=key))
        await blobs.puts.reached.wait()

        second = await upload(client, "s", ("lease.txt", LEASE), headers=key)
        blobs.puts.open()
        done = await first

    problem(second, 409, "idempotency_key_in_flight")
    assert done.status_code == 201


async def test_twenty_concurrent_requests_with_one_key_execute_once(
    api: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, model = api
    key = {"Idempotency-Key": "burst"}

    responses = await asyncio.gather(
        *(upload(client, "s", ("lease.txt", LEASE), ("notes.md", NOTES), headers=key) for _ in range(20))
    )
    manifest = await settled(client, "s")

    executed = [r for r in responses if r.status_code == 201 and "idempotent-replayed" not in r.headers]
    replayed = [r for r in responses if r.headers.get("idempotent-replayed") == "true"]
    in_flight = [r for r in responses if r.status_code == 409]
    assert len(executed) == 1
    assert len(executed) + len(replayed) + len(in_flight) == 20
    assert all(r.json() == executed[0].json() for r in replayed)
    assert all(r.json()["code"] == "idempotency_key_in_flight" for r in in_flight)
    assert [f["diff"] for f in executed[0].json()["files"]] == ["new", "new"]
    assert manifest["revision"] == 1 and len(manifest["files"]) == 2
    assert sorted(task_a_files(model)) == ["lease.txt", "notes.md"]


async def test_idempotency_keys_belong_to_the_principal_that_sent_them() -> None:
    keys = {
        "key-a": ApiKeyPrincipal(organization="acme", user="alice"),
        "key-b": ApiKeyPrincipal(organization="acme", user="bob"),
    }
    async with open_client(Settings(auth="api-key", api_keys=keys), digest_model=digest_model()) as client:
        alice = await upload(
            client, "s", ("lease.txt", LEASE), headers={"X-API-Key": "key-a", "Idempotency-Key": "same"}
        )
        bob = await upload(client, "s", ("lease.txt", LEASE), headers={"X-API-Key": "key-b", "Idempotency-Key": "same"})

    assert alice.status_code == bob.status_code == 201
    assert "idempotent-replayed" not in bob.headers
    assert alice.json()["files"][0]["file_id"] != bob.json()["files"][0]["file_id"]


async def test_a_refused_request_is_refused_the_same_way_on_replay(
    api: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, _ = api
    await upload(client, "s", ("lease.txt", LEASE))
    headers = {"Idempotency-Key": "stale", "If-Match": "7"}

    first = await upload(client, "s", ("notes.md", NOTES), headers=headers)
    replay = await upload(client, "s", ("notes.md", NOTES), headers=headers)

    assert problem(first, 412, "revision_mismatch") == problem(replay, 412, "revision_mismatch")
    assert replay.headers["idempotent-replayed"] == "true"


async def test_if_match_with_a_stale_revision_is_412_and_changes_nothing(
    api: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, _ = api
    created = (await upload(client, "s", ("lease.txt", LEASE), headers={"If-Match": "0"})).json()
    file_id = created["files"][0]["file_id"]

    stale_upload = await upload(client, "s", ("notes.md", NOTES), headers={"If-Match": "0"})
    stale_delete = await client.delete(f"/api/sessions/s/context/files/{file_id}", headers={"If-Match": '"0"'})
    current = await upload(client, "s", ("notes.md", NOTES), headers={"If-Match": '"1"'})
    weak = await client.delete(f"/api/sessions/s/context/files/{file_id}", headers={"If-Match": 'W/"2"'})
    malformed = await upload(client, "s", ("notes.md", NOTES), headers={"If-Match": "yesterday"})

    assert created["revision"] == 1
    problem(stale_upload, 412, "revision_mismatch")
    problem(stale_delete, 412, "revision_mismatch")
    assert current.status_code == 201 and current.json()["revision"] == 2
    assert weak.status_code == 200 and weak.json()["revision"] == 3
    problem(malformed, 400, "invalid_if_match")
    assert [f["filename"] for f in (await client.get("/api/sessions/s/context")).json()["files"]] == ["notes.md"]


async def test_unknown_and_deleted_files_are_404(api: tuple[httpx.AsyncClient, FunctionChatModel]) -> None:
    client, _ = api
    created = (await upload(client, "s", ("lease.txt", LEASE))).json()
    file_id = created["files"][0]["file_id"]
    assert (await client.delete(f"/api/sessions/s/context/files/{file_id}")).status_code == 200
    replacement = [("files", ("lease.txt", NOTES, "text/plain"))]

    problem(await client.put(f"/api/sessions/s/context/files/{file_id}", files=replacement), 404, "file_not_found")
    problem(await client.delete(f"/api/sessions/s/context/files/{file_id}"), 404, "file_not_found")
    for path in ("doc-unknown", "doc-unknown/digest"):
        problem(await client.get(f"/api/sessions/s/context/files/{path}"), 404, "file_not_found")
    problem(await client.put("/api/sessions/s/context/files/doc-unknown", files=replacement), 404, "file_not_found")
    problem(await client.get("/api/sessions/nobody/context"), 404, "session_not_found")
    problem(await client.get("/api/sessions/nobody/context/digest"), 404, "session_not_found")


async def test_an_upload_without_files_is_400(api: tuple[httpx.AsyncClient, FunctionChatModel]) -> None:
    client, _ = api

    no_parts = await client.post("/api/sessions/s/context/files", data={"note": "x"}, files=[("other", ("a", b"x"))])
    two_for_one = await client.put(
        "/api/sessions/s/context/files/doc-1",
        files=[("files", ("a.txt", b"a", "text/plain")), ("files", ("b.txt", b"b", "text/plain"))],
    )

    problem(no_parts, 400, "no_files")
    problem(two_for_one, 400, "too_many_files")
    problem(await client.post("/api/sessions/s/context/files", json={}), 400, "not_multipart")


async def test_a_file_and_its_digest_are_served_with_their_hashes(
    api: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, _ = api
    await upload(client, "s", ("lease.txt", LEASE))
    manifest = await settled(client, "s")
    record = manifest["files"][0]

    metadata = (await client.get(f"/api/sessions/s/context/files/{record['file_id']}")).json()
    digest = await client.get(f"/api/sessions/s/context/files/{record['file_id']}/digest")

    spec_fields = {
        "file_id", "filename", "mime_type", "size_bytes", "uploaded_at", "content_hash", "extracted_text_hash",
        "chunking_version", "spans_hash", "prompt_version", "digest_status", "digest_hash", "digest_ref",
    }  # fmt: skip
    assert spec_fields <= set(metadata) and metadata == record
    assert digest.headers["etag"] == f'"{record["digest_hash"]}"'
    assert digest.json()["document"] == {"filename": "lease.txt", "format": "text"}
    assert {"context_set_id", "session_id", "revision", "updated_at", "files", "aggregate_digest_status",
            "aggregate_digest_ref"} <= set(manifest)  # fmt: skip


async def test_the_stream_sends_manifests_until_nothing_is_parsing_then_done(
    api: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, _ = api
    await upload(client, "s", ("lease.txt", LEASE), ("notes.md", NOTES))

    response = await client.get("/api/sessions/s/context/stream")

    assert response.headers["content-type"].startswith("text/event-stream")
    blocks = [block for block in response.text.split("\n\n") if block]
    assert blocks[0] == "retry: 3000"
    events = [dict(line.split(": ", 1) for line in block.split("\n")) for block in blocks[1:]]
    assert {event["event"] for event in events[:-1]} == {"manifest"} and events[-1]["event"] == "done"
    last = json.loads(events[-2]["data"])
    assert last["parsing"] is False and last["aggregate_digest_status"] == "ready"
    assert json.loads(events[-1]["data"]) == {"revision": 1, "parsing": False}


async def test_a_client_can_subscribe_to_the_stream_before_the_first_upload(
    api: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, _ = api
    stream = asyncio.create_task(client.get("/api/sessions/early/context/stream"))
    uploaded = await upload(client, "early", ("lease.txt", LEASE))
    assert uploaded.status_code == 201

    response = await stream

    assert response.status_code == 200
    blocks = [block for block in response.text.split("\n\n") if block][1:]
    events = [dict(line.split(": ", 1) for line in block.split("\n")) for block in blocks]
    first = json.loads(events[0]["data"])
    assert events[0]["event"] == "manifest" and first["revision"] == 0 and first["files"] == []
    assert [file["filename"] for file in json.loads(events[-2]["data"])["files"]] == ["lease.txt"]
    assert json.loads(events[-1]["data"]) == {"revision": 1, "parsing": False}
