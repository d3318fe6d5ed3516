"""What a newcomer stumbled on: a session that has files but no turn yet, error messages with real paths."""

from __future__ import annotations

import io

import httpx
from pypdf import PdfReader

from tests.http.conftest import settled, upload


async def test_a_session_with_files_but_no_turn_is_listed(client: httpx.AsyncClient) -> None:
    await upload(client, "files-only", ("lease.txt", b"The rent is 900 euros."))
    await settled(client, "files-only")
    await client.post("/api/orc", json={"question": "Hello?", "conversation_id": "with-turn"})

    sessions = (await client.get("/api/sessions")).json()["sessions"]

    listed = {session["conversation_id"]: session for session in sessions}
    assert set(listed) == {"files-only", "with-turn"}
    assert listed["files-only"]["message_count"] == 0
    assert listed["files-only"]["title"] == "lease.txt"


async def test_a_session_whose_files_are_all_removed_is_no_longer_listed(client: httpx.AsyncClient) -> None:
    created = (await upload(client, "gone", ("lease.txt", b"The rent is 900 euros."))).json()
    await client.delete(f"/api/sessions/gone/context/files/{created['files'][0]['file_id']}")

    assert (await client.get("/api/sessions")).json()["sessions"] == []


async def test_asking_about_a_file_not_uploaded_names_the_real_upload_path(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/api/orc", json={"question": "rent?", "conversation_id": "conv-9", "blob_names": ["lease.txt"]}
    )

    assert response.status_code == 404
    detail = response.json()["detail"]
    assert "/api/sessions/conv-9/context/files" in detail and "{id}" not in detail


async def test_a_listed_session_with_files_but_no_turn_opens_and_exports_as_an_empty_conversation(
    client: httpx.AsyncClient,
) -> None:
    await upload(client, "files-only", ("lease.txt", b"The rent is 900 euros."))

    opened = await client.get("/api/sessions/files-only")
    exported = await client.get("/api/sessions/files-only/export", params={"format": "markdown"})

    assert opened.status_code == 200, opened.text
    assert opened.json()["title"] == "lease.txt" and opened.json()["messages"] == []
    assert exported.status_code == 200, exported.text


async def test_a_session_that_never_had_files_or_turns_is_still_not_found(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/sessions/never-used")

    assert response.status_code == 404
    assert response.json()["code"] == "session_not_found"


async def test_a_file_too_long_to_summarize_says_so_in_the_users_words(client: httpx.AsyncClient) -> None:
    manual = "\n\n".join(f"Section {n}. The daemon rereads its configuration on a hangup signal." for n in range(6000))
    await upload(client, "manual", ("manual.txt", manual.encode()))

    record = (await settled(client, "manual"))["files"][0]

    assert record["status"] == "ready" and record["digest_status"] == "error"
    reason = record["digest_error"]
    assert reason.startswith("too long to summarize (") and "ask about it instead" in reason
    assert "documents." not in reason and "model call" not in reason and "digest" not in reason


async def test_a_file_too_long_to_summarize_carries_a_permanent_code_and_refuses_a_retry(
    client: httpx.AsyncClient,
) -> None:
    manual = "\n\n".join(f"Section {n}. The daemon rereads its configuration on a hangup signal." for n in range(6000))
    await upload(client, "big", ("manual.txt", manual.encode()), ("notes.txt", b"The daemon logs to syslog."))
    manifest = await settled(client, "big")
    big = next(record for record in manifest["files"] if record["filename"] == "manual.txt")

    retried = await client.post(f"/api/sessions/big/context/files/{big['file_id']}/retry-parse")

    assert big["digest_status"] == "error" and big["digest_error_code"] == "too_long"
    assert big["digest_error"].startswith("too long to summarize (")  # the reason stays as it was
    assert retried.status_code == 409 and retried.json()["code"] == "not_retryable"
    # The summary of all files is made from the files that have one; the long file never holds it back.
    assert manifest["aggregate_digest_status"] == "ready" and manifest["aggregate_digest_error_code"] is None
    notes = next(record for record in manifest["files"] if record["filename"] == "notes.txt")
    assert notes["digest_status"] == "ready" and notes["digest_error_code"] is None


async def test_a_pdf_export_quotes_api_documentation_as_it_is_written(client: httpx.AsyncClient) -> None:
    await upload(client, "api", ("fs-api.txt", b"The exists function takes a path <string> and a callback <Function>."))
    await settled(client, "api")
    turn = {"question": "What does the exists function take?", "conversation_id": "api"}
    assert (await client.post("/api/orc", json=turn)).status_code == 200

    exported = await client.get("/api/sessions/api/export", params={"format": "pdf"})

    assert exported.status_code == 200
    text = " ".join(
        " ".join((page.extract_text() or "").split()) for page in PdfReader(io.BytesIO(exported.content)).pages
    )
    assert text.count("a path <string> and a callback <Function>") == 2, text  # the answer and its footnote
    assert "&lt;" not in text


async def test_a_conversation_without_files_has_the_empty_context_set_and_a_stranger_id_has_none(
    client: httpx.AsyncClient,
) -> None:
    asked = await client.post("/api/orc", json={"question": "Hello?", "conversation_id": "no-files"})
    paused = await client.post(
        "/api/orc",
        json={"question": "What is the parking fee?", "conversation_id": "waiting", "context_requests": "allow"},
    )
    assert asked.status_code == 200 and paused.json()["status"] == "context_required", paused.text

    for conversation in ("no-files", "waiting"):
        manifest = await client.get(f"/api/sessions/{conversation}/context")
        assert manifest.status_code == 200, manifest.text
        assert (manifest.json()["revision"], manifest.json()["files"]) == (0, [])
    unknown = await client.get("/api/sessions/never-used/context")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "session_not_found")
