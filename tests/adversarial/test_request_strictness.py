"""Requests that say one thing and could be read as another are refused: ``If-Match: *`` on a session that does
not exist, and a focus context with a misspelt key."""

from __future__ import annotations

from tests.http.conftest import open_client, upload


async def test_if_match_star_on_a_missing_session_is_a_failed_precondition_and_stores_nothing() -> None:
    async with open_client() as client:
        refused = await upload(client, "nosuch", ("a.txt", b"hello"), headers={"If-Match": "*"})
        created = await upload(client, "s1", ("a.txt", b"hello"))
        again = await upload(client, "s1", ("b.txt", b"world"), headers={"If-Match": "*"})
        missing = await client.get("/api/sessions/nosuch/context")

    assert (refused.status_code, refused.json()["code"]) == (412, "revision_mismatch")
    assert missing.status_code == 404
    assert created.status_code == again.status_code == 201  # "*" on an existing session: any revision


async def test_a_focus_context_with_an_unknown_key_is_refused_not_read_differently() -> None:
    async with open_client() as client:
        await client.put("/api/contexts/folder/legal", json={"name": "Legal"})
        refused = await client.post(
            "/api/orc", json={"question": "Hi?", "context": {"type": "folder", "id": "legal", "ID": "other"}}
        )

    assert (refused.status_code, refused.json()["code"]) == (422, "validation_error")
    assert (refused.json()["errors"][0]["loc"])[-1] == "ID"
