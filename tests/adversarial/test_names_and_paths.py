"""Names and paths an attacker (or an unlucky user) sends: names a folder-based store cannot hold are refused as
names before anything is written, and questions that are not text are refused before anything runs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.http.conftest import open_client, upload


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with open_client() as client:
        yield client


def problem(response: httpx.Response) -> tuple[int, str]:
    return response.status_code, response.json().get("code")


@pytest.mark.parametrize(
    ("first", "second"),
    [("dir/f.md", "dir"), ("dir", "dir/f.md"), ("a/b/c.txt", "a/b"), ("a", "a/b/c.txt")],
)
async def test_a_name_that_would_be_both_a_file_and_a_folder_is_refused_and_leaves_no_trace(
    http: httpx.AsyncClient, first: str, second: str
) -> None:
    assert (await upload(http, "s1", (first, b"first file"))).status_code == 201
    before = (await http.get("/api/sessions/s1/context")).json()

    refused = await upload(http, "s1", (second, b"second file"))
    after = (await http.get("/api/sessions/s1/context")).json()

    assert problem(refused) == (409, "name_conflict")
    assert after["revision"] == before["revision"]
    assert [f["filename"] for f in after["files"]] == [first]  # no failed ghost entry


async def test_one_upload_cannot_hold_a_file_and_a_folder_of_the_same_name(http: httpx.AsyncClient) -> None:
    refused = await upload(http, "s1", ("dir", b"a"), ("dir/f.md", b"b"))

    assert problem(refused) == (409, "name_conflict")
    assert (await http.get("/api/sessions/s1/context")).status_code == 404  # nothing was stored


async def test_context_documents_refuse_the_same_conflicts(http: httpx.AsyncClient) -> None:
    await http.put("/api/contexts/folder/legal", json={"name": "Legal"})
    stored = await http.post(
        "/api/contexts/folder/legal/documents", files=[("files", ("dir/f.md", b"a", "text/plain"))]
    )
    refused = await http.post("/api/contexts/folder/legal/documents", files=[("files", ("dir", b"b", "text/plain"))])
    listed = (await http.get("/api/contexts/folder/legal/documents")).json()

    assert stored.status_code in (201, 202)
    assert problem(refused) == (409, "name_conflict")
    assert [d["filename"] for d in listed["documents"]] == ["dir/f.md"]


@pytest.mark.parametrize(
    ("name", "why"),
    [("report.", "end with '.'"), ("notes/draft./x.md", "end with '.'"), ("a" * 256 + ".md", "at most 255 bytes")],
)
async def test_names_a_file_system_cannot_store_are_invalid_names_not_server_errors(
    http: httpx.AsyncClient, name: str, why: str
) -> None:
    refused = await upload(http, "s1", (name, b"text"))

    assert problem(refused) == (400, "invalid_name") and why in refused.json()["detail"]
    assert (await http.get("/api/sessions/s1/context")).status_code == 404


@pytest.mark.parametrize(
    "name", ["<img src=x onerror=alert(1)> lease.txt", "[pay here](javascript:alert(3)) notes.md", "a <b>bold</b>.md"]
)
async def test_a_file_name_holding_markup_or_a_link_is_refused_at_every_intake_and_stores_nothing(
    http: httpx.AsyncClient, name: str
) -> None:
    """Responses carry a stored name exactly as given (a client sends it back to address the file), so a name the
    output policy would have to change is refused rather than served raw or stored changed."""
    session = await upload(http, "s1", (name, b"The rent is 900 euros."))
    await http.put("/api/contexts/folder/legal", json={"name": "Legal"})
    context = await http.post("/api/contexts/folder/legal/documents", files=[("files", (name, b"x", "text/plain"))])
    turn = await http.post("/api/orc", json={"question": "What is the rent?", "blob_names": [name]})

    assert problem(session) == (400, "invalid_name")
    assert problem(context) == (400, "invalid_name")
    assert problem(turn) == (400, "invalid_name")
    assert (await http.get("/api/sessions/s1/context")).status_code == 404
    assert (await http.get("/api/contexts/folder/legal/documents")).json()["documents"] == []


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b'{"question": "What is \\ud800 the rent?"}', "invalid_question"),  # a lone surrogate
        (b'{"question": "What is\\u0000 the rent?"}', "invalid_question"),
        (b'{"question": "\\u200b\\u200d\\ufeff"}', "empty_question"),  # zero-width characters only
    ],
)
async def test_questions_that_are_not_text_are_refused_before_anything_runs(
    http: httpx.AsyncClient, raw: bytes, code: str
) -> None:
    refused = await http.post("/api/orc", content=raw, headers={"Content-Type": "application/json"})

    assert problem(refused) == (400, code)
    assert (await http.get("/api/sessions")).json()["sessions"] == []  # nothing stored
