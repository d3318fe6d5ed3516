"""Bad input over HTTP: problem+json with a stable code, nothing stored, and no storage call for bad names."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from orc.settings import ApiKeyPrincipal, Settings
from tests.http.conftest import ClientFactory, open_client, settled, upload
from tests.support import CallCounter, counting_stores

HOSTILE_BLOB_NAMES = [
    "../other/secret.pdf",
    "./doc.pdf",
    "/etc/passwd",
    "dir\\doc.pdf",
    "%2e%2e%2fsecret.pdf",
    "．．／secret.pdf",
    "doc\x00.pdf",
    "doc\x07.pdf",
    "https://evil.example/doc.pdf",
    "a" * 1025,
]


@pytest.fixture
async def counted() -> AsyncIterator[tuple[httpx.AsyncClient, CallCounter]]:
    stores, counter = counting_stores()
    async with open_client(
        Settings(max_question_chars=200, max_upload_bytes=1000, max_blob_names=2), stores=stores
    ) as client:
        await upload(client, "conv", ("doc.txt", b"The rent is 900 euros."))
        await settled(client, "conv")  # the document's digests are made in the background: let them finish first
        counter.reset()
        yield client, counter


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["code"] == code
    assert "Traceback" not in response.text and "sqlite" not in response.text.lower()
    return body


@pytest.mark.parametrize("name", HOSTILE_BLOB_NAMES)
async def test_hostile_blob_names_are_refused_before_any_storage_call(
    counted: tuple[httpx.AsyncClient, CallCounter], name: str
) -> None:
    client, counter = counted
    response = await client.post(
        "/api/orc", json={"question": "rent?", "conversation_id": "conv", "blob_names": [name]}
    )

    assert_problem(response, 400, "invalid_name")
    assert counter.calls == []


async def test_a_blob_name_that_is_not_a_file_of_the_conversation_is_not_found(
    counted: tuple[httpx.AsyncClient, CallCounter],
) -> None:
    client, counter = counted
    response = await client.post(
        "/api/orc", json={"question": "rent?", "conversation_id": "conv", "blob_names": ["missing.pdf"]}
    )

    assert_problem(response, 404, "document_not_found")
    assert not any(call.endswith(("create", "upsert", "replace", "put")) for call in counter.calls)


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"question": ""}, 400, "empty_question"),
        ({"question": "   \n "}, 400, "empty_question"),
        ({"question": "x" * 201}, 413, "question_too_long"),
        ({"question": 42}, 422, "validation_error"),
        ({"question": "hi", "blob_names": "doc.txt"}, 422, "validation_error"),
        ({"question": "hi", "blob_names": [1]}, 422, "validation_error"),
        ({"question": "hi", "role": "admin"}, 422, "validation_error"),
        ({}, 422, "validation_error"),
        ({"question": "hi", "conversation_id": "../x"}, 400, "invalid_name"),
        ({"question": "hi", "blob_names": ["a.txt", "b.txt", "c.txt"]}, 400, "too_many_blob_names"),
    ],
)
async def test_invalid_turn_requests_are_refused_and_store_nothing(
    counted: tuple[httpx.AsyncClient, CallCounter], body: dict[str, object], status: int, code: str
) -> None:
    client, counter = counted
    assert_problem(await client.post("/api/orc", json=body), status, code)
    assert counter.calls == []


async def test_malformed_json_is_a_bad_request(counted: tuple[httpx.AsyncClient, CallCounter]) -> None:
    client, counter = counted
    response = await client.post("/api/orc", content=b'{"question": ', headers={"content-type": "application/json"})

    assert_problem(response, 400, "malformed_json")
    assert counter.calls == []


async def test_an_upload_over_the_limit_is_refused_and_not_stored(
    counted: tuple[httpx.AsyncClient, CallCounter],
) -> None:
    client, counter = counted
    response = await upload(client, "conv", ("big.txt", b"x" * 2000))

    assert_problem(response, 413, "payload_too_large")
    assert counter.calls == []


async def test_an_oversized_body_is_refused_even_without_a_content_length(
    counted: tuple[httpx.AsyncClient, CallCounter],
) -> None:
    client, _ = counted

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"question": "'
        for _ in range(200):
            yield b"x" * 10_000
        yield b'"}'

    response = await client.post("/api/orc", content=chunks(), headers={"content-type": "application/json"})
    assert_problem(response, 413, "payload_too_large")


async def test_a_bad_name_refuses_the_whole_upload(counted: tuple[httpx.AsyncClient, CallCounter]) -> None:
    client, counter = counted
    assert_problem(await upload(client, "conv", ("fine.txt", b"fine"), ("../escape.txt", b"data")), 400, "invalid_name")
    assert counter.calls == []


@pytest.mark.parametrize(
    ("files", "status", "code"),
    [
        ([("empty.txt", b"")], 400, "empty_file"),
        ([("image.bin", b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")], 415, "unsupported_media_type"),
        ([("big.txt", b"x" * 1001)], 413, "payload_too_large"),
    ],
)
async def test_an_upload_whose_every_file_is_unusable_is_refused_and_stores_nothing(
    counted: tuple[httpx.AsyncClient, CallCounter], files: list[tuple[str, bytes]], status: int, code: str
) -> None:
    client, counter = counted
    assert_problem(await upload(client, "conv", *files), status, code)
    assert counter.calls == []


async def test_only_the_unusable_files_of_a_batch_are_refused_each_with_its_reason(
    counted: tuple[httpx.AsyncClient, CallCounter],
) -> None:
    client, _ = counted
    response = await upload(
        client,
        "conv",
        ("Apache-2.0", b"Licensed under the Apache License, Version 2.0."),
        ("image.bin", b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR"),
        ("empty.txt", b""),
    )

    assert response.status_code == 201, response.text
    body = response.json()
    assert [change["filename"] for change in body["files"]] == ["Apache-2.0"]
    assert body["files"][0]["status"] == "ready"
    assert [(item["filename"], item["code"]) for item in body["refused"]] == [
        ("image.bin", "unsupported_media_type"),
        ("empty.txt", "empty_file"),
    ]


async def test_an_upload_without_files_is_a_bad_request(counted: tuple[httpx.AsyncClient, CallCounter]) -> None:
    client, _ = counted
    response = await client.post("/api/sessions/conv/context/files", data={"other": "x"}, files={"x": ("a", b"b")})
    assert_problem(response, 400, "no_files")
    assert_problem(await client.post("/api/sessions/conv/context/files", json={}), 400, "not_multipart")


async def test_unknown_sessions_and_files_are_not_found(counted: tuple[httpx.AsyncClient, CallCounter]) -> None:
    client, _ = counted
    assert_problem(await client.get("/api/sessions/nope"), 404, "session_not_found")
    assert_problem(await client.delete("/api/sessions/nope"), 404, "session_not_found")
    assert_problem(await client.delete("/api/sessions/conv/context/files/doc-unknown"), 404, "file_not_found")
    assert_problem(await client.get("/api/nothing-here"), 404, "not_found")


KEYS = {
    "key-alice": ApiKeyPrincipal(organization="contoso", user="alice"),
    "key-mallory": ApiKeyPrincipal(organization="fabrikam", user="mallory"),
}


async def test_another_principals_conversation_and_files_are_not_found(client_factory: ClientFactory) -> None:
    settings = Settings(auth="api-key", api_keys=KEYS)
    async with client_factory(settings) as client:
        alice = {"X-API-Key": "key-alice"}
        mallory = {"Authorization": "Bearer key-mallory"}
        await upload(client, "alice-conv", ("lease.txt", b"The rent is 900 euros."), headers=alice)
        ask = {"question": "What is the rent?", "conversation_id": "alice-conv", "blob_names": ["lease.txt"]}
        assert (await client.post("/api/orc", json=ask, headers=alice)).status_code == 200

        assert_problem(await client.get("/api/sessions/alice-conv", headers=mallory), 404, "session_not_found")
        assert_problem(await client.delete("/api/sessions/alice-conv", headers=mallory), 404, "session_not_found")
        assert_problem(await client.post("/api/orc", json=ask, headers=mallory), 404, "document_not_found")
        assert_problem(await client.get("/api/sessions/alice-conv/context", headers=mallory), 404, "session_not_found")
        assert (await client.get("/api/sessions", headers=mallory)).json()["sessions"] == []
        assert len((await client.get("/api/sessions/alice-conv", headers=alice)).json()["messages"]) == 2


async def test_requests_without_a_valid_api_key_are_unauthenticated(client_factory: ClientFactory) -> None:
    async with client_factory(Settings(auth="api-key", api_keys=KEYS)) as client:
        assert_problem(await client.get("/api/sessions"), 401, "unauthenticated")
        assert_problem(await client.get("/api/sessions", headers={"X-API-Key": "key-alic"}), 401, "unauthenticated")
        response = await client.post("/api/orc", json={"question": "hi"}, headers={"X-API-Key": "wrong"})
        assert_problem(response, 401, "unauthenticated")
        assert json.loads(response.text)["detail"].startswith("a valid API key")
