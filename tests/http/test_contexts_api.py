"""/api/contexts: the context tree, context documents, and the bad input the issue lists."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from orc.composition import Stores
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from orc.storage.ports import BlobInfo
from tests.documents.gates import GatedBlobStore
from tests.documents.pdf_factory import make_pdf
from tests.http.conftest import open_client

ORG = "default"  # the local principal's organization (ORC_AUTH=none)


def assert_problem(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == code


async def put(client: httpx.AsyncClient, path: str, name: str, parent_id: str | None = None) -> httpx.Response:
    return await client.put(f"/api/contexts/{path}", json={"name": name, "parent_id": parent_id})


async def upload(client: httpx.AsyncClient, path: str, *files: tuple[str, bytes], **kwargs: Any) -> httpx.Response:
    parts = [("files", (name, data, "application/octet-stream")) for name, data in files]
    return await client.post(f"/api/contexts/{path}/documents", files=parts, **kwargs)


async def make_tree(client: httpx.AsyncClient) -> None:
    assert (await put(client, "folder/legal", "Legal")).status_code == 201
    assert (await put(client, "usecase/leases", "Leases", "legal")).status_code == 201


async def test_contexts_are_created_renamed_and_read_with_their_children(client: httpx.AsyncClient) -> None:
    created_org = await put(client, f"organization/{ORG}", "Default Inc.")
    await make_tree(client)
    renamed = await put(client, "folder/legal", "Legal department")
    folder = (await client.get("/api/contexts/folder/legal")).json()
    organization = (await client.get(f"/api/contexts/organization/{ORG}")).json()

    assert created_org.status_code == 201 and created_org.json()["name"] == "Default Inc."
    assert renamed.status_code == 200
    assert folder["name"] == "Legal department"
    assert (folder["parent_type"], folder["parent_id"]) == ("organization", ORG)
    assert folder["children"] == [{"type": "usecase", "id": "leases", "name": "Leases"}]
    assert organization["children"] == [{"type": "folder", "id": "legal", "name": "Legal department"}]


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("planet/earth", {"name": "Earth"}, 400, "unknown_context_type"),
        ("organization/globex", {"name": "Not mine"}, 404, "context_not_found"),
        (f"organization/{ORG}", {"name": "Org", "parent_id": "legal"}, 422, "invalid_parent"),
        ("folder/legal", {"name": "Self", "parent_id": "legal"}, 422, "context_cycle"),
        ("folder/legal", {"name": "Under its usecase", "parent_id": "leases"}, 422, "context_cycle"),
        ("folder/other", {"name": "Under a usecase", "parent_id": "leases"}, 422, "invalid_parent"),
        ("usecase/orphan", {"name": "No parent"}, 422, "invalid_parent"),
        ("usecase/wrong", {"name": "Under the organization", "parent_id": ORG}, 422, "invalid_parent"),
        ("usecase/nested", {"name": "Under a usecase", "parent_id": "leases"}, 422, "invalid_parent"),
        ("folder/elsewhere", {"name": "Other org", "parent_id": "globex"}, 404, "parent_not_found"),
        ("usecase/lost", {"name": "Missing folder", "parent_id": "nope"}, 404, "parent_not_found"),
        ("folder/blank", {"name": "   "}, 400, "invalid_name"),
        ("folder/bad%20id", {"name": "Bad id"}, 400, "invalid_name"),
        ("folder/x", {"name": "Extra", "owner": "me"}, 422, "validation_error"),
    ],
)
async def test_bad_context_requests_are_refused_with_a_stable_code(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], status: int, code: str
) -> None:
    await make_tree(client)

    assert_problem(await client.put(f"/api/contexts/{path}", json=body), status, code)


async def test_unknown_contexts_are_not_found(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/api/contexts/folder/nope"), 404, "context_not_found")
    assert_problem(await client.get("/api/contexts/folder/nope/documents"), 404, "context_not_found")
    assert_problem(await upload(client, "folder/nope", ("a.txt", b"a")), 404, "context_not_found")
    assert_problem(await client.get("/api/contexts/organization/globex"), 404, "context_not_found")


async def test_documents_are_uploaded_listed_and_removed(client: httpx.AsyncClient) -> None:
    await make_tree(client)
    uploaded = await upload(client, "usecase/leases", ("lease.md", b"# Lease\n\nRent: 900 euros."), ("n.txt", b"Hi."))
    listed = (await client.get("/api/contexts/usecase/leases/documents")).json()
    first_id = listed["documents"][0]["document_id"]
    removed = await client.delete(f"/api/contexts/usecase/leases/documents/{first_id}")
    again = await client.delete(f"/api/contexts/usecase/leases/documents/{first_id}")
    after = (await client.get("/api/contexts/usecase/leases/documents")).json()

    assert uploaded.status_code == 202
    assert [(d["filename"], d["status"], d["diff"]) for d in uploaded.json()["documents"]] == [
        ("lease.md", "ready", "new"),
        ("n.txt", "ready", "new"),
    ]
    assert [(d["filename"], d["context_type"], d["context_id"]) for d in listed["documents"]] == [
        ("lease.md", "usecase", "leases"),
        ("n.txt", "usecase", "leases"),
    ]
    assert removed.status_code == 204
    assert_problem(again, 404, "document_not_found")
    assert [d["filename"] for d in after["documents"]] == ["n.txt"]


async def test_a_corrupt_pdf_is_failed_while_the_other_files_are_ready(client: httpx.AsyncClient) -> None:
    response = await upload(
        client,
        f"organization/{ORG}",
        ("good.pdf", make_pdf([["A readable page."]])),
        ("corrupt.pdf", b"%PDF-1.4\n%%garbage that is not a PDF body"),
        ("notes.txt", b"Plain notes."),
    )

    assert response.status_code == 202
    status = {d["filename"]: (d["status"], d["status_reason"]) for d in response.json()["documents"]}
    assert status["good.pdf"] == ("ready", None) and status["notes.txt"] == ("ready", None)
    assert status["corrupt.pdf"][0] == "failed" and "PDF" in status["corrupt.pdf"][1]


@pytest.mark.parametrize(
    ("files", "status", "code"),
    [
        ([("empty.txt", b"")], 400, "empty_file"),
        ([("archive.zip", b"PK\x03\x04not a docx")], 415, "unsupported_media_type"),
        ([("image.bin", b"\x89PNG\r\n\x1a\n\x00\x00")], 415, "unsupported_media_type"),
    ],
)
async def test_an_upload_whose_every_file_is_unusable_is_refused_and_nothing_is_stored(
    client: httpx.AsyncClient, files: list[tuple[str, bytes]], status: int, code: str
) -> None:
    response = await upload(client, f"organization/{ORG}", *files)
    listed = (await client.get(f"/api/contexts/organization/{ORG}/documents")).json()

    assert_problem(response, status, code)
    assert listed["documents"] == []


async def test_a_bad_name_refuses_the_whole_upload(client: httpx.AsyncClient) -> None:
    response = await upload(client, f"organization/{ORG}", ("fine.txt", b"fine"), ("../escape.txt", b"data"))
    listed = (await client.get(f"/api/contexts/organization/{ORG}/documents")).json()

    assert_problem(response, 400, "invalid_name")
    assert listed["documents"] == []


async def test_only_the_unusable_files_of_an_upload_are_refused(client: httpx.AsyncClient) -> None:
    response = await upload(
        client,
        f"organization/{ORG}",
        ("Apache-2.0", b"Licensed under the Apache License, Version 2.0."),
        ("image.bin", b"\x89PNG\r\n\x1a\n\x00\x00"),
    )

    assert response.status_code == 202
    body = response.json()
    assert [(doc["filename"], doc["status"]) for doc in body["documents"]] == [("Apache-2.0", "ready")]
    assert [(item["filename"], item["code"]) for item in body["refused"]] == [("image.bin", "unsupported_media_type")]


async def test_an_upload_without_files_or_over_the_limit_is_refused() -> None:
    async with open_client(Settings(max_upload_bytes=1000)) as client:
        assert_problem(await upload(client, f"organization/{ORG}", ("big.txt", b"x" * 2000)), 413, "payload_too_large")
        response = await client.post(f"/api/contexts/organization/{ORG}/documents", files={"x": ("a", b"b")})
        assert_problem(response, 400, "no_files")


class BigFileHeld(GatedBlobStore):
    """Holds reads of ``big.pdf`` alone at the gate: other documents are processed as usual."""

    async def get(self, name: str) -> tuple[bytes, BlobInfo]:
        if name.endswith("/big.pdf"):
            return await super().get(name)
        return await self.inner.get(name)


async def wait_for_status(client: httpx.AsyncClient, path: str, filename: str, wanted: str) -> str:
    """Poll a context's documents until ``filename`` is ``wanted`` or failed; the deadline bounds a document that
    never gets there, it is not a wait."""
    deadline = time.monotonic() + 240
    while True:
        listed = (await client.get(f"/api/contexts/{path}/documents")).json()
        status = str({d["filename"]: d["status"] for d in listed["documents"]}[filename])
        if status == wanted or status == "failed" or time.monotonic() > deadline:
            return status
        await asyncio.sleep(0.1)  # poll interval, not a wait for processing


async def test_a_200_page_pdf_upload_neither_blocks_nor_is_blocked_by_other_requests() -> None:
    pages = [[f"Page {n}: the quarterly figure for region {n} is {n * 7} units."] * 30 for n in range(1, 201)]
    big = make_pdf(pages)
    blobs = BigFileHeld()
    async with open_client(stores=Stores(MemoryCollectionProvider(), blobs)) as client:
        blobs.gets.close()
        big_upload = asyncio.create_task(upload(client, f"organization/{ORG}", ("big.pdf", big)))
        await blobs.gets.reached.wait()  # the big file is stored; its processing is held before it reads it
        others = await asyncio.gather(
            client.get("/api/health"),
            client.get(f"/api/contexts/organization/{ORG}/documents"),
            upload(client, f"organization/{ORG}", ("small.txt", b"A small note about region 7.")),
            client.post("/api/orc", json={"question": "What does the small note say about region 7?"}),
        )
        # Everything above was answered while the big upload was in flight and its processing unfinished.
        blobs.gets.open()
        response = await big_upload
        statuses = [
            await wait_for_status(client, f"organization/{ORG}", name, "ready") for name in ("small.txt", "big.pdf")
        ]

    assert [r.status_code for r in others] == [200, 200, 202, 200]
    assert response.status_code == 202
    assert statuses == ["ready", "ready"]
