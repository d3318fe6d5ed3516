"""Acceptance of context-digest-spec §10 over HTTP, counting Task A and Task B requests of the digest model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from orc.digests.schema import split_ref
from orc.settings import Settings
from orc.testing import FunctionChatModel
from tests.digests.support import (
    GatedDigestModel,
    digest_model,
    offline_answer,
    task_a_files,
    task_b_calls,
    task_of,
    tasks,
)
from tests.http.conftest import open_client, settled, upload

LEASE = b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first day of each month."
HANDBOOK = b"Employee handbook.\n\nNew employees get 25 vacation days per calendar year."
WARRANTY = b"Product warranty.\n\nThe warranty lasts two years from the date of purchase."
NOTES = b"# Notes\n\nThe deposit is 2,900 euros and is returned within 30 days of the end of the lease."


@pytest.fixture
async def digests() -> AsyncIterator[tuple[httpx.AsyncClient, FunctionChatModel]]:
    model = digest_model()
    async with open_client(Settings(), digest_model=model) as client:
        yield client, model


async def three_files(client: httpx.AsyncClient) -> dict[str, Any]:
    response = await upload(client, "s", ("lease.txt", LEASE), ("handbook.txt", HANDBOOK), ("warranty.txt", WARRANTY))
    assert response.status_code == 201, response.text
    return await settled(client, "s")


def ids(manifest: dict[str, Any]) -> dict[str, str]:
    return {f["filename"]: f["file_id"] for f in manifest["files"]}


async def replace(client: httpx.AsyncClient, session: str, file_id: str, data: bytes, **kwargs: Any) -> httpx.Response:
    files = [("files", ("new-content.txt", data, "text/plain"))]
    return await client.put(f"/api/sessions/{session}/context/files/{file_id}", files=files, **kwargs)


async def test_a_first_upload_digests_each_file_once_then_aggregates_once(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, model = digests

    manifest = await three_files(client)

    assert sorted(task_a_files(model)) == ["handbook.txt", "lease.txt", "warranty.txt"]
    assert tasks(model)[-1] == "B" and task_b_calls(model) == 1
    assert manifest["aggregate_digest_status"] == "ready"
    assert {f["digest_status"] for f in manifest["files"]} == {"ready"}
    assert all(f["prompt_version"] == "v1.4" and len(f["digest_hash"]) == 64 for f in manifest["files"])


async def test_uploading_an_identical_file_again_is_unchanged_with_no_task_a_and_the_same_aggregate(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, model = digests
    before = await three_files(client)
    calls = model.calls

    again = await upload(client, "s", ("lease.txt", LEASE))
    after = await settled(client, "s")

    assert again.json()["files"][0]["diff"] == "unchanged" and again.json()["revision"] == before["revision"]
    assert model.calls == calls  # no Task A, no Task B
    assert after["aggregate_digest_ref"] == before["aggregate_digest_ref"]
    assert after["changes"]["text"] == "no changes" and after["revision"] == before["revision"]


async def test_replacing_one_file_runs_task_a_for_it_alone_then_task_b(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, model = digests
    before = await three_files(client)
    calls = model.calls

    response = await replace(client, "s", ids(before)["handbook.txt"], HANDBOOK + b"\n\nRemote work is allowed.")
    after = await settled(client, "s")

    assert response.status_code == 200
    assert response.json()["files"] == [
        {
            "file_id": ids(before)["handbook.txt"],
            "filename": "handbook.txt",
            "status": "ready",
            "digest_status": response.json()["files"][0]["digest_status"],
            "diff": "changed",
        }
    ]
    assert tasks(model)[calls:] == ["A:handbook.txt", "B"]
    assert after["revision"] == before["revision"] + 1
    assert after["changes"]["text"] == "+0 new, ~1 changed, −0 deleted"
    assert after["aggregate_digest_ref"] != before["aggregate_digest_ref"]


async def test_deleting_one_file_runs_no_task_a_and_one_task_b(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, model = digests
    before = await three_files(client)
    calls = model.calls

    response = await client.delete(f"/api/sessions/s/context/files/{ids(before)['warranty.txt']}")
    after = await settled(client, "s")
    aggregate = (await client.get("/api/sessions/s/context/digest")).json()

    assert response.json()["files"][0]["diff"] == "deleted"
    assert tasks(model)[calls:] == ["B"]
    assert [f["filename"] for f in aggregate["batch"]["files"]] == ["lease.txt", "handbook.txt"]
    assert after["changes"]["text"] == "+0 new, ~0 changed, −1 deleted"


async def test_a_multi_file_upload_runs_task_a_only_for_new_and_changed_files_and_task_b_once(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, model = digests
    await three_files(client)
    calls = model.calls

    response = await upload(
        client,
        "s",
        ("lease.txt", LEASE),  # unchanged
        ("handbook.txt", HANDBOOK + b"\n\nExpenses are filed within 30 days."),  # changed
        ("notes.md", NOTES),  # new
    )
    after = await settled(client, "s")

    assert [f["diff"] for f in response.json()["files"]] == ["unchanged", "changed", "new"]
    assert sorted(tasks(model)[calls:-1]) == ["A:handbook.txt", "A:notes.md"] and tasks(model)[-1] == "B"
    assert task_b_calls(model) == 2  # one for the first upload, one for this one
    assert after["changes"]["text"] == "+1 new, ~1 changed, −0 deleted"


async def test_every_fact_of_every_digest_cites_a_span_that_exists(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, _ = digests
    manifest = await three_files(client)
    names = [f["filename"] for f in manifest["files"]]

    aggregate = (await client.get("/api/sessions/s/context/digest")).json()
    per_file = {
        f["filename"]: (await client.get(f"/api/sessions/s/context/files/{f['file_id']}/digest")).json()
        for f in manifest["files"]
    }

    for record in manifest["files"]:
        filename, digest = record["filename"], per_file[record["filename"]]
        existing = {f"S{n}" for n in range(1, record["span_count"] + 1)}  # spans are numbered S1..Sn
        assert digest["mode"] == "single" and digest["document"]["filename"] == filename
        for fact in digest["facts"]:
            assert fact["sources"], fact
            for ref in fact["sources"]:
                parts = split_ref(ref, [filename])
                assert parts is not None and parts[1] in existing, ref
    cited = {ref for fact in aggregate["facts"] for ref in fact["sources"]}
    assert cited and all(split_ref(ref, names) is not None for ref in cited)
    assert cited <= {ref for digest in per_file.values() for fact in digest["facts"] for ref in fact["sources"]}


async def test_the_manifest_and_the_digests_always_belong_to_the_latest_revision() -> None:
    model = GatedDigestModel()
    async with open_client(Settings(), digest_model=model) as client:
        first = await upload(client, "s", ("lease.txt", LEASE))
        await model.reached.wait()  # Task A of lease.txt is being made

        during = (await client.get("/api/sessions/s/context")).json()
        not_ready = await client.get("/api/sessions/s/context/digest")
        second = await upload(client, "s", ("notes.md", NOTES))
        latest = (await client.get("/api/sessions/s/context")).json()
        model.open()
        done = await settled(client, "s")
        aggregate = await client.get("/api/sessions/s/context/digest")

    assert first.json()["revision"] == during["revision"] == 1
    assert during["parsing"] is True and during["aggregate_digest_status"] == "parsing"
    assert during["aggregate_digest_ref"] is None and during["changes"]["text"] == "+1 new, ~0 changed, −0 deleted"
    assert not_ready.status_code == 409 and not_ready.json()["code"] == "not_ready"
    assert second.json()["revision"] == latest["revision"] == done["revision"] == 2
    assert [f["filename"] for f in latest["files"]] == ["lease.txt", "notes.md"]
    assert done["aggregate_digest_status"] == "ready"
    assert aggregate.headers["x-context-revision"] == "2"
    assert [f["filename"] for f in aggregate.json()["batch"]["files"]] == ["lease.txt", "notes.md"]


async def test_the_same_text_in_another_session_of_the_same_user_is_not_digested_again(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, model = digests
    await three_files(client)

    await upload(client, "other", ("lease-copy.txt", LEASE))
    copy = await settled(client, "other")
    digest = (await client.get(f"/api/sessions/other/context/files/{copy['files'][0]['file_id']}/digest")).json()

    assert task_a_files(model).count("lease.txt") == 1 and "lease-copy.txt" not in task_a_files(model)
    assert digest["document"]["filename"] == "lease-copy.txt"
    assert {ref for fact in digest["facts"] for ref in fact["sources"]} == {"lease-copy.txt::S1"}


async def test_a_file_whose_text_cannot_be_extracted_does_not_hold_the_aggregate_back(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, model = digests

    response = await upload(client, "s", ("lease.txt", LEASE), ("scan.pdf", b"%PDF-1.4 not a real pdf"))
    assert response.status_code == 201, response.text
    manifest = await settled(client, "s")  # ends: nothing stays parsing for ever

    files = {f["filename"]: f for f in manifest["files"]}
    assert (files["scan.pdf"]["status"], files["scan.pdf"]["digest_status"]) == ("failed", "error")
    assert manifest["aggregate_digest_status"] == "ready"
    aggregate = (await client.get("/api/sessions/s/context/digest")).json()
    assert [f["filename"] for f in aggregate["batch"]["files"]] == ["lease.txt"]
    assert task_a_files(model) == ["lease.txt"]


async def test_a_failed_digest_is_made_again_by_retry_parse() -> None:
    failing = {"on": True}

    def answer(messages: Any) -> str:
        return "not a digest" if failing["on"] else offline_answer(messages)

    async with open_client(Settings(), digest_model=digest_model(answer)) as client:
        assert (await upload(client, "s", ("lease.txt", LEASE))).status_code == 201
        manifest = await settled(client, "s")
        lease = manifest["files"][0]
        assert lease["digest_status"] == "error"

        failing["on"] = False
        retried = await client.post(f"/api/sessions/s/context/files/{lease['file_id']}/retry-parse")
        assert retried.status_code == 202, retried.text
        assert retried.json()["digest_status"] == "parsing"
        manifest = await settled(client, "s")

        assert manifest["files"][0]["digest_status"] == "ready"
        assert (await client.get(f"/api/sessions/s/context/files/{lease['file_id']}/digest")).status_code == 200


async def test_a_failed_aggregate_shows_its_reason_and_is_made_again_by_its_retry() -> None:
    failing = {"on": True}

    def answer(messages: Any) -> str:
        task, _ = task_of(messages)
        return "not a digest" if task == "B" and failing["on"] else offline_answer(messages)

    model = digest_model(answer)
    async with open_client(Settings(), digest_model=model) as client:
        await three_files(client)
        failed = await settled(client, "s")
        assert failed["aggregate_digest_status"] == "error"
        assert failed["aggregate_digest_error"]  # the reason, for the page to show
        assert {f["digest_status"] for f in failed["files"]} == {"ready"}
        nothing = await client.post("/api/sessions/s/context/files/" + failed["files"][0]["file_id"] + "/retry-parse")
        assert nothing.json()["digest_status"] == "ready"  # a file's retry is not the aggregate's
        calls_before = task_b_calls(model)

        failing["on"] = False
        retried = await client.post("/api/sessions/s/context/digest/retry-parse")
        assert retried.status_code == 202, retried.text
        assert retried.json()["aggregate_digest_status"] == "parsing"
        assert retried.json()["aggregate_digest_error"] is None
        made = await settled(client, "s")

        assert made["aggregate_digest_status"] == "ready"
        assert (await client.get("/api/sessions/s/context/digest")).status_code == 200
        assert task_b_calls(model) == calls_before + 1 and sorted(task_a_files(model)) == sorted(ids(made))
        again = await client.post("/api/sessions/s/context/digest/retry-parse")  # nothing failed: nothing to do
        assert again.status_code == 202 and again.json()["aggregate_digest_status"] == "ready"
        assert task_b_calls(model) == calls_before + 1


async def test_retrying_the_aggregate_of_an_unknown_session_is_not_found(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, _ = digests

    response = await client.post("/api/sessions/nobody/context/digest/retry-parse")

    assert response.status_code == 404 and response.json()["code"] == "session_not_found"


async def test_retry_parse_refuses_a_file_whose_text_could_not_be_extracted(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, _ = digests
    assert (await upload(client, "s", ("scan.pdf", b"%PDF-1.4 not a real pdf"))).status_code == 201
    scan = (await settled(client, "s"))["files"][0]

    response = await client.post(f"/api/sessions/s/context/files/{scan['file_id']}/retry-parse")

    assert response.status_code == 409 and response.json()["code"] == "not_retryable"


async def test_with_auto_parse_off_a_change_makes_no_digest_until_parse_now(
    digests: tuple[httpx.AsyncClient, FunctionChatModel],
) -> None:
    client, model = digests
    turned = await client.patch("/api/sessions/s/context", json={"auto_parse": False})
    assert turned.status_code == 200, turned.text
    assert turned.json()["auto_parse"] is False

    uploaded = await upload(client, "s", ("lease.txt", LEASE))
    assert uploaded.status_code == 201
    waiting = await settled(client, "s")

    assert task_a_files(model) == [] and task_b_calls(model) == 0
    # The upload's answer and the manifest agree: nothing is being summarized, it waits.
    assert [f["digest_status"] for f in uploaded.json()["files"]] == ["stale"]
    assert waiting["aggregate_digest_status"] == "stale" and not waiting["parsing"]
    assert waiting["auto_parse"] is False
    assert [f["status"] for f in waiting["files"]] == ["ready"]  # the text is extracted: tools can read it
    assert {f["digest_status"] for f in waiting["files"]} == {"stale"}

    started = await client.post("/api/sessions/s/context/parse")
    assert started.status_code == 202, started.text
    done = await settled(client, "s")

    assert task_a_files(model) == ["lease.txt"] and task_b_calls(model) == 1
    assert done["aggregate_digest_status"] == "ready"


async def test_auto_parse_takes_only_a_boolean(digests: tuple[httpx.AsyncClient, FunctionChatModel]) -> None:
    client, _ = digests

    refused = await client.patch("/api/sessions/s/context", json={"auto_parse": "sometimes", "x": 1})

    assert refused.status_code == 422
    assert (await client.get("/api/sessions/s/context")).status_code == 404  # nothing was stored
