"""An upload stopped while its blob is written: the record is marked failed at best, and the reason it stopped wins."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from orc.composition import Services, Stores, build_runtime
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.errors import StorageUnavailable
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from orc.testing.storage import ObservedProvider
from tests.documents.gates import GatedBlobStore
from tests.documents.library_support import ACME, SESSION
from tests.support import CallCounter

ORG = ContextRef("organization", "acme")


async def add_session_file(runtime: Services) -> object:
    """Upload one file to the session."""
    return await runtime.foundation.session_files.add(ACME, SESSION, [Upload("a.txt", b"Some text.")])


async def add_context_document(runtime: Services) -> object:
    """Upload one document to the organization context."""
    return await runtime.foundation.context_documents.add(ACME, ORG, [Upload("a.txt", b"Some text.")])


@pytest.mark.parametrize("add", [add_session_file, add_context_document], ids=["session file", "context document"])
async def test_an_upload_cancelled_during_a_storage_outage_ends_cancelled_not_with_the_outage(
    add: Callable[[Services], Awaitable[object]],
) -> None:
    counter = CallCounter()
    blobs = GatedBlobStore()
    stores = Stores(collections=ObservedProvider(MemoryCollectionProvider(), counter.observe), blobs=blobs)
    async with build_runtime(Settings(), stores=stores) as runtime:
        blobs.puts.close()
        upload = asyncio.create_task(add(runtime))
        await blobs.puts.reached.wait()
        # The catalog goes down while the blob is written, so marking the record failed cannot succeed either.
        counter.fail("catalog.upsert", StorageUnavailable("storage is unreachable"))

        upload.cancel()
        with pytest.raises(asyncio.CancelledError):
            await upload

    assert counter.calls.count("catalog.upsert") == 2  # the record written before the blob, then the failed mark
