"""The aggregate digest of a session with auto-parse off: it reads what it really is once nobody works on it, so a
status stream ends instead of showing ``parsing`` for minutes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from orc.composition import Services, build_runtime
from orc.digests.context import ContextFiles
from orc.documents.intake.uploads import Upload
from orc.documents.sessions import ContextSet
from orc.settings import Settings
from orc.testing import FunctionChatModel
from tests.digests.support import digest_model, task_b_calls
from tests.digests.test_pipeline import LEASE, ME, NOTES, context_of, memory

INVENTORY = Upload("inventory.txt", b"The flat is let with a fridge, a washing machine and two beds.")


@asynccontextmanager
async def digested(
    model: FunctionChatModel, *uploads: Upload
) -> AsyncIterator[tuple[Services, ContextFiles, ContextSet]]:
    """A runtime whose session ``s`` holds ``uploads``, digested: the runtime, its context files, the upload's set."""
    async with build_runtime(Settings(), stores=memory(), digest_model=model) as runtime:
        created = await runtime.foundation.session_files.add(ME, "s", list(uploads))
        assert await runtime.documents.digests.wait_idle(ME, "s", 120)
        yield runtime, context_of(runtime.documents.context_files), created


async def streamed(context: ContextFiles, first: ContextSet) -> list[ContextSet | None]:
    """Everything a status stream sends from ``first``; only a stream that ends by itself returns in time."""
    sent = []
    # Half the stream's poll interval: a stream that waits for anything more fails here.
    async with asyncio.timeout(30):
        async for manifest in context.watch(ME, "s", first, poll_seconds=60, keepalive_seconds=60):
            sent.append(manifest)
    return sent


async def test_with_auto_parse_off_removing_a_file_leaves_the_aggregate_stale_and_the_stream_ends() -> None:
    model = digest_model()
    async with digested(model, LEASE, NOTES) as (runtime, context, created):
        files, digests = runtime.foundation.session_files, runtime.documents.digests
        await context.set_auto_parse(ME, "s", False)
        notes = next(f for f in created.files if f.filename == "notes.md")
        await files.remove(ME, "s", notes.file_id)
        assert await digests.wait_idle(ME, "s", 120)
        after = await context.manifest(ME, "s")
        sent = await streamed(context, after)

    # The lease's digest is ready, but the aggregate still covers the notes: it waits for "parse now".
    assert [(f.filename, f.digest_status) for f in after.files] == [("lease.txt", "ready")]
    assert after.aggregate_digest_status == "stale" and after.aggregate_digest_ref is None
    assert not after.parsing
    assert sent == [after]
    assert task_b_calls(model) == 1


async def test_with_auto_parse_off_removing_the_last_file_leaves_the_aggregate_stale_and_the_stream_ends() -> None:
    model = digest_model()
    async with digested(model, LEASE) as (runtime, context, created):
        files, digests = runtime.foundation.session_files, runtime.documents.digests
        await context.set_auto_parse(ME, "s", False)
        await files.remove(ME, "s", created.files[0].file_id)
        assert await digests.wait_idle(ME, "s", 120)
        after = await context.manifest(ME, "s")
        sent = await streamed(context, after)

    assert after.files == [] and after.aggregate_digest_status == "stale" and not after.parsing
    assert sent == [after]
    assert task_b_calls(model) == 1


async def test_turning_auto_parse_back_on_rebuilds_the_aggregate_of_the_files_left() -> None:
    model = digest_model()
    async with digested(model, LEASE, NOTES) as (runtime, context, created):
        files, digests = runtime.foundation.session_files, runtime.documents.digests
        await context.set_auto_parse(ME, "s", False)
        notes = next(f for f in created.files if f.filename == "notes.md")
        await files.remove(ME, "s", notes.file_id)
        assert await digests.wait_idle(ME, "s", 120)
        await context.set_auto_parse(ME, "s", True)
        assert await digests.wait_idle(ME, "s", 120)
        rebuilt = await context.manifest(ME, "s")

    assert rebuilt.aggregate_digest_status == "ready" and rebuilt.aggregate.files == 1
    assert task_b_calls(model) == 2


async def test_turning_auto_parse_back_on_makes_the_digest_of_a_file_added_while_it_was_off() -> None:
    model = digest_model()
    async with digested(model, LEASE) as (runtime, context, _):
        files, digests = runtime.foundation.session_files, runtime.documents.digests
        await context.set_auto_parse(ME, "s", False)
        await files.add(ME, "s", [NOTES])
        assert await digests.wait_idle(ME, "s", 120)
        turned_on = await context.set_auto_parse(ME, "s", True)
        assert await digests.wait_idle(ME, "s", 120)
        made = await context.manifest(ME, "s")

    assert turned_on.parsing
    assert {f.digest_status for f in made.files} == {"ready"} and made.aggregate_digest_status == "ready"
    assert made.aggregate.files == 2 and task_b_calls(model) == 2


async def test_with_auto_parse_off_a_new_file_leaves_the_aggregate_stale_and_the_stream_ends() -> None:
    model = digest_model()
    async with digested(model, LEASE) as (runtime, context, _):
        files, digests = runtime.foundation.session_files, runtime.documents.digests
        await context.set_auto_parse(ME, "s", False)
        await files.add(ME, "s", [NOTES])
        assert await digests.wait_idle(ME, "s", 120)
        after = await context.manifest(ME, "s")
        sent = await streamed(context, after)

    assert {f.filename: f.digest_status for f in after.files} == {"lease.txt": "ready", "notes.md": "stale"}
    assert after.aggregate_digest_status == "stale" and not after.parsing
    assert sent == [after]
    assert task_b_calls(model) == 1


async def test_with_auto_parse_off_a_set_changed_back_reads_its_aggregate_as_ready() -> None:
    model = digest_model()
    async with digested(model, LEASE, NOTES) as (runtime, context, _):
        files, digests = runtime.foundation.session_files, runtime.documents.digests
        before = await context.manifest(ME, "s")
        await context.set_auto_parse(ME, "s", False)
        added = await files.add(ME, "s", [INVENTORY])
        assert await digests.wait_idle(ME, "s", 120)
        await files.remove(ME, "s", added.files[0].file_id)
        assert await digests.wait_idle(ME, "s", 120)
        after = await context.manifest(ME, "s")
        sent = await streamed(context, after)

    # The files are the ones the stored aggregate was made from: it is theirs, with no new Task B.
    assert after.aggregate_digest_status == "ready" and not after.parsing
    assert after.aggregate_digest_ref == before.aggregate_digest_ref
    assert sent == [after]
    assert task_b_calls(model) == 1
