"""The search port's conformance suite against a real Azure AI Search service — run only when
``ORC_SEARCH_ENDPOINT`` names one (with ``ORC_SEARCH_KEY``, or Entra ID from the environment); skipped otherwise,
since no emulator exists.

Each test gets an index of its own (created, then deleted). The service makes writes searchable in about a second
rather than at once, so the engine under test waits after each of its writes until the index shows it — the head's
version, no item of another version, every span of the new one — by asking the service, never by sleeping a fixed
time.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from orc.search.azure import AzureSearchEngine
from orc.search.azure.schema import document_filter, odata_literal
from orc.search.port import IndexedDocument, SearchEngine
from orc.testing.conformance import SearchConformance

ENDPOINT = os.environ.get("ORC_SEARCH_ENDPOINT", "")
SETTLE_SECONDS = 60.0

pytestmark = pytest.mark.skipif(not ENDPOINT, reason="ORC_SEARCH_ENDPOINT names no Azure AI Search service")


class SettledEngine(AzureSearchEngine):
    """The engine, each write returning once the service's index shows it. Its index is made on first use, its
    vector field the size of the first vectors written (the suite's tests use 2 or 3 dimensions)."""

    created = False

    async def _ensure(self, document: IndexedDocument | None = None) -> None:
        if not self.created:
            size = len(document.vectors[0]) if document is not None and document.vectors else 3
            assert await self.prepare(create=True, dimensions=size) == []
            self.created = True

    async def search(self, request):  # type: ignore[no-untyped-def]
        await self._ensure()
        return await super().search(request)

    async def upsert(self, document: IndexedDocument) -> None:
        await self._ensure(document)
        await super().upsert(document)
        where = document_filter(document.organization, document.document_id)

        async def settled() -> bool:
            entry = (await self.entries(document.organization, [document.document_id])).get(document.document_id)
            stale = await self._rows(f"{where} and version ne {odata_literal(document.version)}", ["id"], 1)
            fresh = await self._rows(
                f"{where} and version eq {odata_literal(document.version)} and ordinal ge 0", ["id"], 1000
            )
            return (
                entry is not None
                and entry.version == document.version
                and not stale
                and len(fresh) == len(document.spans)
            )

        await _until(settled)

    async def delete(self, organization: str, document_id: str) -> None:
        await self._ensure()
        await super().delete(organization, document_id)

        async def settled() -> bool:
            return not await self._rows(document_filter(organization, document_id), ["id"], 1)

        await _until(settled)


async def _until(condition: object) -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while not await condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the search service did not show a write within a minute"
        await asyncio.sleep(0.25)  # polling the service for the state, not waiting for a time


class TestAzureAISearch(SearchConformance):
    @pytest_asyncio.fixture
    async def engine(self) -> AsyncIterator[SearchEngine]:
        from azure.search.documents.indexes.aio import SearchIndexClient

        name = f"orc-live-{uuid.uuid4().hex[:12]}"
        made = AzureSearchEngine.from_endpoint(ENDPOINT, name, key=os.environ.get("ORC_SEARCH_KEY") or None)
        engine = SettledEngine(made._client, made._indexes, name, owned_credential=made._owned_credential)
        indexes: SearchIndexClient = engine._indexes
        try:
            yield engine
        finally:
            if engine.created:
                await indexes.delete_index(name)
            await engine.aclose()
