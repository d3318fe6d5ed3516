"""Names, ids and headers: a Windows path is not silently cut to a file name, Windows-unsafe ids are refused, a
session with files can be named before its first turn, every response says nosniff, CSRF trusts only Host, and
anonymous callers do not learn orc's version."""

from __future__ import annotations

import json

import pytest

from orc import __version__
from orc.errors import InvalidName
from orc.names import validate_blob_name, validate_identifier
from orc.settings import Settings
from tests.adversarial.test_auth_and_identity import easyauth_user
from tests.http.conftest import open_client, upload

KEYS = {"key-ada": {"organization": "acme", "user": "ada"}}


async def test_an_upload_named_by_a_windows_path_is_refused_and_replaces_nothing() -> None:
    async with open_client() as client:
        assert (await upload(client, "s1", ("report.txt", b"The original."))).status_code == 201
        refused = await upload(client, "s1", ("C:\\Users\\mallory\\report.txt", b"The replacement."))
        content = await client.get("/api/sessions/s1/context")

    assert refused.status_code == 400 and refused.json()["code"] == "invalid_name"
    assert [file["filename"] for file in content.json()["files"]] == ["report.txt"]
    assert content.json()["files"][0]["size_bytes"] == len(b"The original.")


@pytest.mark.parametrize("value", ["x.", "CON", "con", "nul", "COM1", "lpt9", "aux.txt"])
def test_windows_unsafe_ids_are_refused(value: str) -> None:
    with pytest.raises(InvalidName):
        validate_identifier(value, what="conversation")


@pytest.mark.parametrize("name", ["CON", "notes/nul.txt", "PRN.md", "com3.csv"])
def test_windows_device_names_are_refused_as_file_names(name: str) -> None:
    with pytest.raises(InvalidName):
        validate_blob_name(name)


@pytest.mark.parametrize("fine", ["console.txt", "icon.png", "x.y", "conversation-1"])
def test_names_that_merely_start_like_a_device_are_fine(fine: str) -> None:
    assert validate_blob_name(fine) == fine
    assert validate_identifier(fine, what="conversation") == fine


async def test_a_session_with_files_and_no_turn_can_be_renamed_and_keeps_its_title() -> None:
    async with open_client() as client:
        await upload(client, "s1", ("lease.txt", b"The rent is 900 euros."))
        renamed = await client.patch("/api/sessions/s1", json={"title": "My lease"})
        listed = await client.get("/api/sessions")
        turn = await client.post("/api/orc", json={"question": "What is the rent?", "conversation_id": "s1"})
        after = await client.get("/api/sessions")

    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["title"] == "My lease"
    assert [(s["conversation_id"], s["title"]) for s in listed.json()["sessions"]] == [("s1", "My lease")]
    assert turn.status_code == 200
    assert [(s["title"], s["message_count"]) for s in after.json()["sessions"]] == [("My lease", 2)]


async def test_every_json_response_and_problem_says_nosniff() -> None:
    async with open_client(Settings(max_request_bytes=1000)) as client:
        responses = [
            await client.get("/api/sessions"),
            await client.get("/api/sessions/unknown"),
            await client.post("/api/orc", content=b"x" * 2000, headers={"content-type": "application/json"}),
            await client.get("/api/health"),
        ]

    assert [r.status_code for r in responses] == [200, 404, 413, 200]
    assert all(r.headers.get("x-content-type-options") == "nosniff" for r in responses)


async def test_csrf_trusts_the_host_header_not_x_forwarded_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBSITE_AUTH_ENABLED", "True")  # App Service authentication is on
    forged = {
        **easyauth_user("victim"),
        "Host": "orc.example",
        "Origin": "https://evil.example",
        "X-Forwarded-Host": "evil.example",
    }
    async with open_client(Settings(auth="easyauth")) as client:
        refused = await client.patch("/api/sessions/s1", json={"title": "pwned"}, headers=forged)

    assert refused.status_code == 403 and refused.json()["code"] == "cross_site_request"


async def test_anonymous_callers_do_not_learn_the_version_but_a_signed_in_one_does() -> None:
    settings = Settings(auth="api-key", api_keys=json.dumps(KEYS))  # type: ignore[arg-type]
    async with open_client(settings) as client:
        anonymous = [await client.get("/api/openapi.json"), await client.get("/api/ui-config")]
        signed_in = [
            await client.get(path, headers={"X-API-Key": "key-ada"}) for path in ("/api/openapi.json", "/api/ui-config")
        ]

    assert anonymous[0].json()["info"]["version"] != __version__
    assert anonymous[1].json()["version"] is None
    assert signed_in[0].json()["info"]["version"] == __version__
    assert signed_in[1].json()["version"] == __version__
