"""Orc's search paths on the Azure AI Search engine: documents processed into the service's index, found by
``documents.search`` with their sections and pages, read back by ``get_span``, cited by a turn and removed
— every request through the real SDK to a transport that answers like the service (tests/search/azure_service.py),
every one of them trimmed to the caller's organization, the semantic ranker reading the questions as asked. With
embeddings, a retrieval is one hybrid request the service fuses and re-ranks itself."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from orc.composition import Stores, build_runtime
from orc.conversations.models import FocusContext
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.principal import Principal
from orc.resources import SEARCH_INDEX
from orc.search.azure import AzureSearchEngine
from orc.search.port import index_version
from orc.search.retriever import Retriever, Target
from orc.search.text_store import VectorLocation
from orc.search.vectors import SpanVectors, SpanVectorStore
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollection, MemoryCollectionProvider
from orc.testing.embeddings import HashedEmbeddingModel
from orc.turns import TurnRequest, TurnResult
from tests.models.openai_endpoint import OpenAIEndpoint, RunningEndpoint, serve
from tests.search.azure_service import ENDPOINT, Recorded, SearchService
from tests.search.ranking import SCOPE, text_of

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


# -- hybrid retrieval: the service's own --------------------------------------------------------------------------

DIMENSIONS = 256
"""The loopback embeddings' size (orc.testing.embeddings), which the index is created with."""


@pytest.fixture(scope="module")
def embeddings() -> Iterator[RunningEndpoint]:
    yield from serve(OpenAIEndpoint())


def span_queries(requests: list[Recorded]) -> list[dict[str, Any]]:
    """The span searches among ``requests`` (not the term counts, head listings or deletions' listings)."""
    return [
        request.body
        for request in requests
        if request.path.endswith("search.post.search")
        and (request.body.get("vectorQueries") or (request.body.get("search") and not request.body.get("count")))
    ]


async def test_a_turn_with_embeddings_is_one_hybrid_semantic_request_whose_ranking_the_answer_cites(
    tmp_path: Path, embeddings: RunningEndpoint
) -> None:
    embeddings.endpoint.reset()
    service = SearchService()
    engine = AzureSearchEngine.from_endpoint(ENDPOINT, SEARCH_INDEX, key="test-key", transport=service, semantic=True)
    assert await engine.prepare(create=True, dimensions=DIMENSIONS) == []
    legal = ContextRef("folder", "legal")
    stores = Stores(MemoryCollectionProvider(), MemoryBlobStore(), search=engine)
    settings = Settings(home=tmp_path, embeddings="openai:local-embed", embeddings_base_url=embeddings.base_url)
    try:
        async with build_runtime(settings, stores=stores) as services:
            await services.foundation.directory.put(ALICE, legal, "Legal", None)
            await services.foundation.context_documents.add(ALICE, legal, [Upload("lease.md", LEASE)])
            before = len(service.requests)
            answer = await services.orchestrator.ask(
                TurnRequest(
                    question="How much is the deposit?",
                    conversation_id="c1",
                    context=FocusContext(type="folder", id="legal"),
                ),
                ALICE,
            )
    finally:
        await engine.aclose()

    assert isinstance(answer, TurnResult)
    (query,) = span_queries(service.requests[before:])
    (vector_query,) = query["vectorQueries"]
    assert query["search"] and len(vector_query["vector"]) == DIMENSIONS
    assert (query["queryType"], query["semanticQuery"]) == ("semantic", "How much is the deposit?")
    assert query["filter"].startswith("organization eq 'acme' ")
    assert answer.metadata.retrieval is not None
    assert answer.metadata.retrieval.legs == ["lexical", "vector"]
    assert answer.metadata.retrieval.fusion == "engine"
    assert any(citation.document == "lease.md" and "900" in citation.quote for citation in answer.citations)


def azure_engine(service: SearchService, **options: Any) -> AzureSearchEngine:
    return AzureSearchEngine.from_endpoint(ENDPOINT, SEARCH_INDEX, key="test-key", transport=service, **options)


async def indexed_lease(retriever: Retriever, vectors: SpanVectors, *, embed: bool = True) -> Target:
    text = text_of(
        "The tenant pays a deposit of 900 euros before moving in. The deposit is returned within a month of the "
        "end of the lease, less the cost of any repairs the landlord must make to the flat. " * 3,
        "Cats are allowed in the flat; dogs need the landlord's written consent. A pet that damages the flat is "
        "the tenant's charge, and the landlord may ask for a further deposit for it. " * 3,
    )
    matrix = await vectors.embed_document(text, VectorLocation("acme/contexts", "lease", "c" * 64)) if embed else None
    await retriever.index(text, document_id="lease", scope=SCOPE, vectors=matrix)
    version = index_version(text.extracted_text_hash, text.chunking_version)
    return Target(document_id="lease", name="lease.txt", version=version, scope=SCOPE)


async def test_a_retrieval_with_embeddings_reads_the_services_hybrid_ranking_back_as_ranked_spans() -> None:
    service = SearchService()
    engine = azure_engine(service)
    await engine.prepare(create=True, dimensions=DIMENSIONS)
    vectors = SpanVectors(HashedEmbeddingModel(), SpanVectorStore(MemoryCollection("document_text")))
    retriever = Retriever(engine, vectors=vectors)
    lease = await indexed_lease(retriever, vectors)
    before = len(service.requests)

    found = await retriever.retrieve(
        "dogs consent", "acme", [lease], limit=2, query_vector=retriever.embed_query("dogs consent")
    )
    await engine.aclose()

    (query,) = span_queries(service.requests[before:])
    assert query["queryType"] == "full" and query["search"].startswith("terms:dog")
    assert query["filter"].endswith("and (vector_model eq '" + vectors.store_key + "' or vector_model eq null)")
    assert [span.ref for span in found.spans] == ["lease.txt::S2", "lease.txt::S1"]
    assert "dogs need" in found.spans[0].span.text and found.spans[0].score > found.spans[1].score > 0
    assert found.legs.fusion == "engine" and found.legs.lexical_only == []


async def test_a_failed_query_embedding_sends_azure_ai_search_the_lexical_request_alone_and_says_why() -> None:
    service = SearchService()
    engine = azure_engine(service)
    await engine.prepare(create=True, dimensions=DIMENSIONS)
    vectors = SpanVectors(HashedEmbeddingModel(), SpanVectorStore(MemoryCollection("document_text")))
    retriever = Retriever(engine, vectors=vectors)
    lease = await indexed_lease(retriever, vectors)
    before = len(service.requests)

    async def broken() -> np.ndarray:
        raise TimeoutError

    found = await retriever.retrieve(
        "dogs consent", "acme", [lease], limit=2, query_vector=asyncio.ensure_future(broken())
    )
    await engine.aclose()

    queries = span_queries(service.requests[before:])
    assert queries and not any("vectorQueries" in query for query in queries)
    assert found.legs.legs == ["lexical"] and found.legs.vector_error == "embedding_timeout"
    assert found.spans[0].ref == "lease.txt::S2"


async def test_a_document_without_vectors_yet_is_found_by_its_words_in_the_one_hybrid_request() -> None:
    service = SearchService()
    engine = azure_engine(service)
    await engine.prepare(create=True, dimensions=DIMENSIONS)
    vectors = SpanVectors(HashedEmbeddingModel(), SpanVectorStore(MemoryCollection("document_text")))
    retriever = Retriever(engine, vectors=vectors)
    lease = await indexed_lease(retriever, vectors, embed=False)
    before = len(service.requests)

    found = await retriever.retrieve(
        "dogs consent", "acme", [lease], limit=2, query_vector=retriever.embed_query("dogs consent")
    )
    await retriever.aclose()  # the lease's vectors were being made in the background meanwhile
    await engine.aclose()

    assert len([query for query in span_queries(service.requests[before:]) if "vectorQueries" in query]) == 1
    assert found.spans[0].ref == "lease.txt::S2"
    assert found.legs.fusion == "engine" and found.legs.lexical_only == ["lease.txt"]
