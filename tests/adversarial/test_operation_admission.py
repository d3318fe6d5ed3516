"""Costly operations besides turns are admitted and counted (issue 25 item 4): uploads have files and bytes per
principal per window, refused whole with 429 ``upload_limit`` and ``Retry-After`` before anything is stored,
parsed or digested, while another principal's uploads go on."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from orc.errors import PayloadTooLarge
from orc.settings import Settings
from tests.http.conftest import open_client

KEYS = {
    "key-flood": {"organization": "acme", "user": "flooder", "role": "admin"},
    "key-calm": {"organization": "globex", "user": "calm"},
}


def api_key_settings(**limits: object) -> Settings:
    return Settings(auth="api-key", api_keys=json.dumps(KEYS), **limits)  # type: ignore[arg-type]


async def upload(client: httpx.AsyncClient, key: str, *files: tuple[str, bytes]) -> httpx.Response:
    parts = [("files", (name, data, "text/plain")) for name, data in files]
    return await client.post("/api/sessions/s1/context/files", files=parts, headers={"X-API-Key": key})


async def stored(client: httpx.AsyncClient, key: str) -> list[str]:
    response = await client.get("/api/sessions/s1/context", headers={"X-API-Key": key})
    return sorted(file["filename"] for file in response.json()["files"])


async def test_uploads_over_the_file_window_are_refused_with_429_and_nothing_is_stored() -> None:
    async with open_client(api_key_settings(upload_rate="3/hour")) as client:
        first = await upload(client, "key-flood", ("a.txt", b"Alpha."), ("b.txt", b"Beta."))
        refused = await upload(client, "key-flood", ("c.txt", b"Gamma."), ("d.txt", b"Delta."))
        last = await upload(client, "key-flood", ("c.txt", b"Gamma."))
        again = await upload(client, "key-flood", ("e.txt", b"Epsilon."))
        other = await upload(client, "key-calm", ("a.txt", b"Alpha."), ("b.txt", b"Beta."), ("c.txt", b"Gamma."))
        created = await client.put(
            "/api/contexts/organization/acme", json={"name": "Acme"}, headers={"X-API-Key": "key-flood"}
        )
        context = await client.post(
            "/api/contexts/organization/acme/documents",
            files=[("files", ("x.txt", b"X.", "text/plain"))],
            headers={"X-API-Key": "key-flood"},
        )
        kept = await stored(client, "key-flood")

    assert [response.status_code for response in (first, last, other)] == [201, 201, 201]
    for response in (refused, again):
        assert response.status_code == 429
        assert response.json()["code"] == "upload_limit"
        assert 1 <= int(response.headers["retry-after"]) <= 3600
    assert created.status_code < 300
    assert context.status_code == 429 and context.json()["code"] == "upload_limit"  # one window for every upload
    assert kept == ["a.txt", "b.txt", "c.txt"]


async def test_uploads_over_the_bytes_window_are_refused_and_the_refused_bytes_are_not_counted() -> None:
    big = b"x" * (600 * 1024)
    async with open_client(api_key_settings(upload_rate="100/hour", upload_mb_per_window=1)) as client:
        first = await upload(client, "key-flood", ("one.txt", big))
        refused = await upload(client, "key-flood", ("two.txt", big))
        small = await upload(client, "key-flood", ("note.txt", b"A short note."))

    assert first.status_code == 201
    assert refused.status_code == 429 and refused.json()["code"] == "upload_limit"
    assert small.status_code == 201


async def test_the_local_user_of_auth_none_has_no_upload_window() -> None:
    async with open_client(Settings(auth="none", upload_rate="1/hour")) as client:
        responses = [
            await client.post("/api/sessions/s1/context/files", files=[("files", (f"{n}.txt", b"Note.", "text/plain"))])
            for n in range(3)
        ]

    assert [response.status_code for response in responses] == [201, 201, 201]


async def test_after_its_turns_are_refused_a_principals_uploads_start_no_digest_model_calls() -> None:
    settings = api_key_settings(rate_limit="1/hour")
    async with open_client(settings) as client:
        ask = {"question": "What is the rent?"}
        assert (await client.post("/api/orc", json=ask, headers={"X-API-Key": "key-flood"})).status_code == 200
        assert (await client.post("/api/orc", json=ask, headers={"X-API-Key": "key-flood"})).status_code == 429
        refused = await upload(client, "key-flood", ("lease.txt", b"The rent is 900 euros a month."))
        admitted = await upload(client, "key-calm", ("lease.txt", b"The rent is 900 euros a month."))
        theirs = await settled(client, "s1", "key-flood")
        ours = await settled(client, "s1", "key-calm")

    assert refused.status_code == 201 and admitted.status_code == 201  # the upload itself is within its window
    assert [file["status"] for file in theirs["files"]] == ["ready"]  # its text is searchable at once
    assert [file["digest_status"] for file in theirs["files"]] == ["stale"]  # but no model call digests it
    assert [file["digest_status"] for file in ours["files"]] == ["ready"]


async def settled(client: httpx.AsyncClient, session_id: str, key: str) -> dict[str, Any]:
    """The session's manifest once no digest is being made (the context stream ends by itself then)."""
    response = await client.get(f"/api/sessions/{session_id}/context/stream", headers={"X-API-Key": key})
    manifests = [
        json.loads(line.removeprefix("data: "))
        for block in response.text.split("\n\n")
        if block.startswith("event: manifest")
        for line in block.split("\n")
        if line.startswith("data: ")
    ]
    manifest: dict[str, Any] = manifests[-1]
    return manifest


async def test_exports_over_the_window_are_refused_with_429_while_another_principal_exports() -> None:
    async with open_client(api_key_settings(export_rate="2/hour")) as client:
        ask = {"question": "What is the rent?", "conversation_id": "c1"}
        for key in ("key-flood", "key-calm"):
            assert (await client.post("/api/orc", json=ask, headers={"X-API-Key": key})).status_code == 200
        exports = [
            await client.get(f"/api/sessions/c1/export?format={fmt}", headers={"X-API-Key": "key-flood"})
            for fmt in ("pdf", "markdown", "json")
        ]
        other = await client.get("/api/sessions/c1/export?format=pdf", headers={"X-API-Key": "key-calm"})

    assert [response.status_code for response in exports] == [200, 200, 429]
    assert exports[0].content.startswith(b"%PDF")
    assert exports[2].json()["code"] == "export_limit" and int(exports[2].headers["retry-after"]) >= 1
    assert other.status_code == 200 and other.content.startswith(b"%PDF")


async def test_a_pdf_export_over_the_size_bound_is_refused_with_413_and_markdown_still_exports() -> None:
    from orc.conversations.exporting import Exports
    from orc.principal import Principal
    from tests.conversations.test_export import conversation
    from tests.documents.library_support import extraction_pool

    long, caller = conversation(300), Principal(organization="acme", user="a")
    exports = Exports(extraction_pool(), max_pdf_chars=1_000)

    with pytest.raises(PayloadTooLarge) as refused:
        await exports.render(caller, long, {}, "pdf")
    markdown = await exports.render(caller, long, {}, "markdown")

    assert refused.value.code == "export_too_large" and "markdown" in refused.value.message
    assert markdown.count(b"Question") == 300


async def test_a_principal_uploading_at_its_concurrency_cap_is_refused_until_one_upload_ends() -> None:
    from orc.admission import Fairness, Limits, RateLimit
    from orc.errors import TooManyRequests
    from orc.principal import Principal
    from orc.storage.memory import MemoryCollectionProvider

    quotas = Limits(
        await MemoryCollectionProvider().collection("quotas"),
        upload_rate=RateLimit.parse("100/hour"),
        concurrent_uploads=2,
        fairness=Fairness(refusal_hold_seconds=0),
    )
    alice, bob = Principal(organization="acme", user="alice"), Principal(organization="globex", user="bob")
    first = await quotas.admit(alice, "upload", files=1, size=10)
    second = await quotas.admit(alice, "upload", files=1, size=10)
    async with first, second:
        with pytest.raises(TooManyRequests) as refused:
            async with await quotas.admit(alice, "upload", files=1, size=10):
                pass
        async with await quotas.admit(bob, "upload", files=1, size=10):
            pass  # another principal is not held back
    async with await quotas.admit(alice, "upload", files=1, size=10):
        pass  # a slot is free again

    assert refused.value.code == "too_many_concurrent_uploads" and refused.value.status == 429


async def test_concurrent_exports_of_one_principal_render_one_at_a_time_and_the_others_get_429() -> None:
    from orc.admission import Fairness, Limits, RateLimit
    from orc.errors import TooManyRequests
    from orc.principal import Principal
    from orc.storage.memory import MemoryCollectionProvider

    quotas = Limits(
        await MemoryCollectionProvider().collection("quotas"),
        export_rate=RateLimit.parse("100/hour"),
        fairness=Fairness(refusal_hold_seconds=0),
    )
    alice = Principal(organization="acme", user="alice")
    rendering = asyncio.Event()

    async def export() -> str:
        try:
            async with await quotas.admit(alice, "export"):
                await rendering.wait()
        except TooManyRequests as exc:
            return exc.code
        return "rendered"

    started = [asyncio.create_task(export()) for _ in range(3)]
    await asyncio.sleep(0)  # one step: every export reaches its admission before any renders
    rendering.set()

    assert sorted(await asyncio.gather(*started)) == [
        "rendered",
        "too_many_concurrent_exports",
        "too_many_concurrent_exports",
    ]
