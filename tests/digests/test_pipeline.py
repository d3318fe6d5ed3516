"""The incremental pipeline beyond the HTTP contract: stale digests, interrupted work, the cache's lifetime, and
the document tools' view of digests."""

from __future__ import annotations

import asyncio

import pytest

from orc.composition import Stores, build_runtime
from orc.composition.tuning import Tuning
from orc.digests.context import ContextFiles
from orc.documents.catalog.availability import DocumentScope
from orc.documents.intake.uploads import Upload
from orc.errors import NotFound, NotReady, StorageUnavailable
from orc.principal import LOCAL_PRINCIPAL, Principal
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from tests.digests.support import GatedDigestModel, digest_model, task_a_files, task_b_calls
from tests.support import counting_stores

LEASE = Upload("lease.txt", b"The monthly rent is 1,450 euros, payable on the first day of each month.")
NOTES = Upload("notes.md", b"# Notes\n\nThe deposit is 2,900 euros and is returned within 30 days.")
ME = LOCAL_PRINCIPAL


def memory() -> Stores:
    return Stores(collections=MemoryCollectionProvider(), blobs=MemoryBlobStore())


def context_of(runtime_context: ContextFiles | None) -> ContextFiles:
    assert runtime_context is not None
    return runtime_context


async def test_a_digest_made_with_another_prompt_version_is_stale_and_remade_when_the_manifest_is_read() -> None:
    stores = memory()
    model = digest_model()
    async with build_runtime(Settings(), stores=stores, digest_model=model) as runtime:
        context = context_of(runtime.documents.context_files)
        await runtime.foundation.session_files.add(ME, "s", [LEASE, NOTES])
        assert await runtime.documents.digests.wait_idle(ME, "s", 120)
        catalog = await stores.collections.collection("catalog")
        (lease,) = [
            item
            for item in await catalog.query(ME.partition_key, id_prefix="sf:s:")
            if item.body["filename"] == "lease.txt"
        ]
        # As if an older prompt (v1.3) had made this digest.
        await catalog.replace(
            ME.partition_key, lease.id, {**lease.body, "prompt_version": "v1.3", "digest_key": "made-by-v1.3"}
        )

        stale = await context.manifest(ME, "s")
        assert await runtime.documents.digests.wait_idle(ME, "s", 120)
        fresh = await context.manifest(ME, "s")

    assert {f.filename: f.digest_status for f in stale.files} == {"lease.txt": "stale", "notes.md": "ready"}
    assert stale.aggregate_digest_status == "stale"
    assert {f.digest_status for f in fresh.files} == {"ready"} and fresh.aggregate_digest_status == "ready"
    # The cached digest of the same text and current prompt is reused: no new Task A, and the aggregate inputs
    # (the digest hashes) did not change, so no new Task B either.
    assert sorted(task_a_files(model)) == ["lease.txt", "notes.md"] and task_b_calls(model) == 1


async def test_work_interrupted_by_a_shutdown_is_left_stale_and_finished_by_the_next_process() -> None:
    stores = memory()
    gated = GatedDigestModel()
    async with build_runtime(Settings(), stores=stores, digest_model=gated) as runtime:
        context = context_of(runtime.documents.context_files)
        await runtime.foundation.session_files.add(ME, "s", [LEASE])
        await gated.reached.wait()
        during = await context.manifest(ME, "s")

    model = digest_model()
    async with build_runtime(Settings(), stores=stores, digest_model=model) as runtime:
        context = context_of(runtime.documents.context_files)
        after_restart = await runtime.foundation.session_files.manifest(ME, "s")
        await context.manifest(ME, "s")  # reading it schedules the stale work
        assert await runtime.documents.digests.wait_idle(ME, "s", 120)
        finished = await context.manifest(ME, "s")

    assert during.files[0].digest_status == "parsing" and during.parsing
    assert after_restart.files[0].digest_status == "stale" and after_restart.aggregate.status == "stale"
    assert finished.files[0].digest_status == "ready" and finished.aggregate_digest_status == "ready"
    assert task_a_files(model) == ["lease.txt"]


async def test_a_shutdown_that_cannot_reset_the_digests_being_made_still_leaves_the_session_stale() -> None:
    stores, counter = counting_stores()
    gated = GatedDigestModel()
    async with build_runtime(Settings(), stores=stores, digest_model=gated) as runtime:
        await runtime.foundation.session_files.add(ME, "s", [LEASE])
        await gated.reached.wait()
        # The digest being made is reset by reading its record first: that read meets a storage outage.
        counter.fail("catalog.get", StorageUnavailable("storage is unreachable"), times=1)
        counter.reset()
    during_shutdown = list(counter.calls)

    async with build_runtime(Settings(), stores=stores, digest_model=digest_model()) as runtime:
        after_restart = await runtime.foundation.session_files.manifest(ME, "s")

    assert "catalog.get" in during_shutdown  # the outage was met
    assert after_restart.files[0].digest_status == "stale" and after_restart.aggregate.status == "stale"


async def test_a_stream_is_woken_as_soon_as_a_pass_that_released_a_cached_digest_ends() -> None:
    async with build_runtime(Settings(), stores=memory(), digest_model=digest_model()) as runtime:
        context = context_of(runtime.documents.context_files)
        files, digests = runtime.foundation.session_files, runtime.documents.digests
        created = await files.add(ME, "s", [LEASE])
        assert await digests.wait_idle(ME, "s", 120)
        # With auto-parse off a pass makes no digest, so removing the lease is a pass that only releases its cached
        # digest; the notes' digest waits (stale), and reads as parsing only while that pass runs.
        await context.set_auto_parse(ME, "s", False)
        await files.add(ME, "s", [NOTES])
        assert await digests.wait_idle(ME, "s", 120)
        await files.remove(ME, "s", created.files[0].file_id)
        first = await context.manifest(ME, "s")
        streamed = []
        # Half the stream's poll interval: only the wake-up at the end of the pass ends the stream in time.
        async with asyncio.timeout(30):
            async for manifest in context.watch(ME, "s", first, poll_seconds=60, keepalive_seconds=60):
                streamed.append(manifest)

    assert first.parsing
    assert streamed[0] is first and streamed[-1] is not None and not streamed[-1].parsing
    assert streamed[-1].files[0].digest_status == "stale"  # the notes' digest waits for "parse now"


async def test_a_cached_digest_is_deleted_when_no_file_uses_its_text_any_more() -> None:
    stores = memory()
    async with build_runtime(Settings(), stores=stores, digest_model=digest_model()) as runtime:
        first = await runtime.foundation.session_files.add(ME, "one", [LEASE])
        second = await runtime.foundation.session_files.add(ME, "two", [LEASE])
        for session in ("one", "two"):
            assert await runtime.documents.digests.wait_idle(ME, session, 120)
        digests = await stores.collections.collection("digests")

        async def cached() -> int:
            items = await digests.query(ME.partition_key, id_prefix="fd:")
            return len(items)

        assert await cached() == 1
        await runtime.foundation.session_files.remove(ME, "one", first.files[0].file_id)
        assert await runtime.documents.digests.wait_idle(ME, "one", 120)  # the release runs in the background
        still_used = await cached()
        await runtime.foundation.session_files.remove(ME, "two", second.files[0].file_id)
        assert await runtime.documents.digests.wait_idle(ME, "two", 120)
        unused = await cached()

    assert still_used == 1 and unused == 0


async def test_get_summary_is_not_ready_while_the_digest_is_made_and_analyze_returns_it_when_ready() -> None:
    gated = GatedDigestModel()
    async with build_runtime(Settings(), stores=memory(), digest_model=gated) as runtime:
        library = runtime.documents.library
        assert library is not None
        mutation = await runtime.foundation.session_files.add(ME, "s", [LEASE])
        file_id = mutation.files[0].file_id
        await gated.reached.wait()
        scope = DocumentScope(session_id="s")

        with pytest.raises(NotReady) as refused:
            await library.summary(ME, scope, file_id)
        gated.open()
        analyzed = await library.analyze(ME, scope, file_id)

    assert "being made" in refused.value.message
    assert analyzed.digest_status == "ready" and analyzed.summary is not None
    assert analyzed.summary.facts[0]["sources"] == ["lease.txt::S1"]
    assert analyzed.summary.prompt_version == "v1.4"


async def test_another_users_session_and_digests_are_not_found() -> None:
    async with build_runtime(Settings(), stores=memory(), digest_model=digest_model()) as runtime:
        context = context_of(runtime.documents.context_files)
        await runtime.foundation.session_files.add(ME, "s", [LEASE])
        other = Principal(organization="default", user="mallory")

        with pytest.raises(NotFound):
            await context.manifest(other, "s")
        with pytest.raises(NotFound):
            await context.aggregate(other, "s")


async def test_replacing_a_file_releases_the_digest_of_its_old_text() -> None:
    stores = memory()
    async with build_runtime(Settings(), stores=stores, digest_model=digest_model()) as runtime:
        context = context_of(runtime.documents.context_files)
        created = await runtime.foundation.session_files.add(ME, "s", [LEASE])
        assert await runtime.documents.digests.wait_idle(ME, "s", 120)
        await runtime.foundation.session_files.replace(
            ME, "s", created.files[0].file_id, Upload("ignored.txt", b"The rent went up to 1,500 euros.")
        )
        assert await runtime.documents.digests.wait_idle(ME, "s", 120)
        digests = await stores.collections.collection("digests")
        cached = [item.body["extracted_text_hash"] for item in await digests.query(ME.partition_key, id_prefix="fd:")]
        manifest = await context.manifest(ME, "s")

    assert cached == [manifest.files[0].extracted_text_hash]
    assert manifest.files[0].filename == "lease.txt"  # a replacement keeps the file's name


async def test_deleting_a_session_deletes_its_aggregate_and_the_digests_only_it_used() -> None:
    stores = memory()
    async with build_runtime(Settings(), stores=stores, digest_model=digest_model()) as runtime:
        await runtime.foundation.session_files.add(ME, "s", [LEASE, NOTES])
        await runtime.foundation.session_files.add(ME, "keep", [NOTES])
        for session in ("s", "keep"):
            assert await runtime.documents.digests.wait_idle(ME, session, 120)

        await runtime.foundation.session_files.remove_all(ME, "s")  # what deleting the conversation does to its files
        digests = await stores.collections.collection("digests")
        left = [(item.body["kind"], item.body.get("filename")) for item in await digests.query(ME.partition_key)]

    assert sorted(left) == [("aggregate_digest", None), ("file_digest", "notes.md")]  # all of session "keep"


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_digests_made_together_are_bounded_by_the_digest_concurrency(concurrency: int) -> None:
    files = [Upload(f"f{n}.txt", f"File {n}: the fee is {n}00 euros.".encode()) for n in range(3)]
    gated = GatedDigestModel()
    tuning = Tuning(digest_concurrency=concurrency)
    async with build_runtime(Settings(), stores=memory(), digest_model=gated, tuning=tuning) as runtime:
        context = context_of(runtime.documents.context_files)
        await runtime.foundation.session_files.add(ME, "s", files)
        async with asyncio.timeout(120):  # bounds a digest that never starts; it starts at once
            await gated.until_waiting(concurrency)
        await context.manifest(ME, "s")  # every file's digest work has started by now: more would be waiting
        gated.open()
        assert await runtime.documents.digests.wait_idle(ME, "s", 120)

    assert gated.most_waiting == concurrency
