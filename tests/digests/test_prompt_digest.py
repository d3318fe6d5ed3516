"""The aggregate digest in the answer prompt: shown when ready for the set's current revision, read from the
session's header alone, and left out (at the cost of one read) for a session without files."""

from __future__ import annotations

from orc.composition import Stores, build_runtime
from orc.digests.context import ContextFiles
from orc.digests.prompt_digest import PromptDigests
from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from tests.digests.support import digest_model
from tests.support import counting_stores

LEASE = Upload("lease.txt", b"The monthly rent is 1,450 euros, payable on the first day of each month.")
NOTES = Upload("notes.md", b"# Notes\n\nThe deposit is 2,900 euros and is returned within 30 days.")
ME = LOCAL_PRINCIPAL


def context_of(context: ContextFiles | None) -> ContextFiles:
    assert context is not None
    return context


async def test_a_ready_aggregate_is_shown_from_the_session_header_and_the_digest_alone() -> None:
    stores, counter = counting_stores()
    async with build_runtime(Settings(), stores=stores, digest_model=digest_model()) as runtime:
        await runtime.foundation.session_files.add(ME, "s", [LEASE, NOTES])
        assert await runtime.documents.digests.wait_idle(ME, "s", 120)
        counter.reset()
        text = await PromptDigests(context_of(runtime.documents.context_files)).text(ME, "s")

    assert text.startswith("Summary: ") and "[lease.txt::S1]" in text
    assert counter.calls == ["catalog.get", "digests.get"]  # no file records are read


async def test_an_aggregate_built_for_an_earlier_revision_of_the_set_is_not_current() -> None:
    stores = Stores(collections=MemoryCollectionProvider(), blobs=MemoryBlobStore())
    async with build_runtime(Settings(), stores=stores, digest_model=digest_model()) as runtime:
        context = context_of(runtime.documents.context_files)
        await runtime.foundation.session_files.add(ME, "s", [LEASE])
        assert await runtime.documents.digests.wait_idle(ME, "s", 120)
        ready = await context.current_aggregate(ME, "s")
        catalog = await stores.collections.collection("catalog")
        header = await catalog.get(ME.partition_key, "sx:s")
        assert header is not None
        # As if another instance had just added a file: the set moved on, its aggregate is not made yet.
        await catalog.replace(ME.partition_key, "sx:s", {**header.body, "revision": header.body["revision"] + 1})
        moved_on = await context.current_aggregate(ME, "s")

    assert ready is not None and ready["summary"]
    assert moved_on is None


async def test_a_session_without_files_has_no_digest_section_for_one_read() -> None:
    stores, counter = counting_stores()
    async with build_runtime(Settings(), stores=stores, digest_model=digest_model()) as runtime:
        counter.reset()
        text = await PromptDigests(context_of(runtime.documents.context_files)).text(ME, "no-files")

    assert text == ""
    assert counter.calls == ["catalog.get"]
