"""Incremental digests and the context-files API on Cosmos DB + Blob Storage (the emulators)."""

from __future__ import annotations

import pytest

from orc.settings import Settings
from tests.digests.support import digest_model, task_a_files, task_b_calls
from tests.http.conftest import open_client, settled, upload

pytestmark = pytest.mark.emulator

LEASE = b"The monthly rent is 1,450 euros, payable on the first day of each month."
NOTES = b"The deposit is 2,900 euros and is returned within 30 days."


async def test_uploads_replacements_deletions_and_replays_on_cosmos_and_blob_storage(azure_settings: Settings) -> None:
    model = digest_model()
    async with open_client(azure_settings, digest_model=model) as client:
        created = await upload(client, "s", ("lease.txt", LEASE), ("notes.md", NOTES), headers={"Idempotency-Key": "k"})
        replay = await upload(client, "s", ("lease.txt", LEASE), ("notes.md", NOTES), headers={"Idempotency-Key": "k"})
        first = await settled(client, "s")
        ids = {f["filename"]: f["file_id"] for f in first["files"]}

        unchanged = await upload(client, "s", ("lease.txt", LEASE))
        replaced = await client.put(
            f"/api/sessions/s/context/files/{ids['notes.md']}",
            files=[("files", ("notes.md", NOTES + b" Pets are allowed.", "text/plain"))],
            headers={"If-Match": "1"},
        )
        stale = await client.delete(f"/api/sessions/s/context/files/{ids['lease.txt']}", headers={"If-Match": "1"})
        deleted = await client.delete(f"/api/sessions/s/context/files/{ids['lease.txt']}", headers={"If-Match": "2"})
        last = await settled(client, "s")
        aggregate = await client.get("/api/sessions/s/context/digest")

    assert created.status_code == replay.status_code == 201 and replay.headers["idempotent-replayed"] == "true"
    assert first["aggregate_digest_status"] == "ready" and {f["digest_status"] for f in first["files"]} == {"ready"}
    assert unchanged.json()["files"][0]["diff"] == "unchanged"
    assert replaced.json()["files"][0]["diff"] == "changed" and replaced.json()["revision"] == 2
    assert stale.status_code == 412 and deleted.json()["revision"] == 3
    assert sorted(task_a_files(model)) == ["lease.txt", "notes.md", "notes.md"]
    assert task_b_calls(model) in (2, 3)  # the replacement's aggregate may be overtaken by the deletion's
    assert last["revision"] == 3 and [f["filename"] for f in last["files"]] == ["notes.md"]
    assert aggregate.headers["x-context-revision"] == "3"
    assert [f["filename"] for f in aggregate.json()["batch"]["files"]] == ["notes.md"]
