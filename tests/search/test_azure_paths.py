"""Orc's search paths on the Azure AI Search engine: documents processed into the service's index, found by
``documents.search`` with their sections and pages, read back by ``get_span``, cited by a turn and removed
— every request through the real SDK to a transport that answers like the service (tests/search/azure_service.py),
every one of them trimmed to the caller's organization, the semantic ranker reading the questions as asked."""

from __future__ import annotations

from pathlib import Path

from orc.composition import Stores, build_runtime
from orc.conversations.models import FocusContext
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.principal import Principal
from orc.resources import SEARCH_INDEX
from orc.search.azure import AzureSearchEngine
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.turns import TurnRequest
from tests.search.azure_service import ENDPOINT, SearchService

ALICE = Principal(organization="acme", user="alice")
MALLORY = Principal(organization="initech", user="mallory")
LEASE = b"""# Lease

## Payments

The tenant pays a deposit of 900 euros before moving in.

## Pets

Cats are allowed in the flat; dogs need the landlord's written consent.
"""


async def test_documents_are_indexed_found_cited_and_removed_through_azure_ai_search(tmp_path: Path) -> None:
    service = SearchService()
    engine = AzureSearchEngine.from_endpoint(ENDPOINT, SEARCH_INDEX, key="test-key", transport=service, semantic=True)
    assert await engine.prepare(create=True) == []
    legal = ContextRef("folder", "legal")
    stores = Stores(MemoryCollectionProvider(), MemoryBlobStore(), search=engine)
    try:
        async with build_runtime(Settings(home=tmp_path), stores=stores) as services:
            library = services.documents.library
            assert library is not None
            await services.foundation.directory.put(ALICE, legal, "Legal", None)
            (uploaded,) = await services.foundation.context_documents.add(ALICE, legal, [Upload("lease.md", LEASE)])
            scope = await services.foundation.scopes.resolve(
                ALICE, session_id="c1", context_type="folder", context_id="legal"
            )
            found = await library.search(ALICE, scope, "deposit euros")
            span = await library.span(ALICE, scope, found.results[0].ref)
            answer = await services.orchestrator.ask(
                TurnRequest(
                    question="How much is the deposit?",
                    conversation_id="c1",
                    context=FocusContext(type="folder", id="legal"),
                ),
                ALICE,
            )
            outsider = await services.foundation.scopes.resolve(MALLORY, session_id="c9")
            theirs = await library.search(MALLORY, outsider, "deposit euros")
            await services.foundation.context_documents.remove(ALICE, legal, uploaded.record.document_id)
            after = await library.search(ALICE, scope, "deposit euros")
    finally:
        await engine.aclose()

    assert uploaded.record.status == "ready"
    hit = found.results[0]
    assert hit.ref.startswith("lease.md::S") and "900 euros" in hit.text and hit.section == "Lease › Payments"
    assert span.spans[0].text == hit.text
    assert any(citation.document == "lease.md" and "900" in citation.quote for citation in answer.citations)
    assert theirs.results == [] and after.results == []
    assert not [item for item in service.items.values() if item["document_id"] == uploaded.record.document_id]
    filters = [
        request.body.get("filter", "") for request in service.requests if request.path.endswith("search.post.search")
    ]
    reads = [where for where in filters if where]
    # The semantic ranker reads the question as asked, not orc's stems of it.
    assert "How much is the deposit?" in {
        request.body.get("semanticQuery") for request in service.requests if request.body
    }
    assert reads and all(where.startswith(("organization eq 'acme' ", "organization eq 'initech' ")) for where in reads)
