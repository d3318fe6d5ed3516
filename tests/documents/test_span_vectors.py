"""Span vectors: made in batches, stored beside the text on every collection backend, keyed by the embedding model,
made lazily by the retriever (never waited for) when the index lacks them; the fusion of the two legs."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from orc.extracted import ExtractedDocument
from orc.models.embeddings import EmbeddingPurpose
from orc.search.fusion import reciprocal_rank_fusion
from orc.search.memory import MemorySearchEngine
from orc.search.port import ScopeFields, index_version, owner_key
from orc.search.retriever import Retriever, Target
from orc.search.text_store import DocumentText, TextStore, process_extracted
from orc.search.vectors import SpanVectors, SpanVectorStore, VectorLocation, normalized
from orc.storage.ports import CollectionProvider, DocumentCollection
from orc.testing.embeddings import HashedEmbeddingModel, hashed_vector
from tests.storage.conftest import provider  # noqa: F401  (the per-backend fixture: memory, SQLite, Cosmos)

WHERE = VectorLocation(partition_key="acme/alice", document_id="doc-1", content_hash="c" * 64)


def text_of(pages: Sequence[str]) -> DocumentText:
    """One span per page."""
    return process_extracted(ExtractedDocument(pages=list(pages), media_type="application/pdf"))


LEASE = text_of(["The monthly rent is 900 euros.", "The notice period is 60 days.", "The boat is moored at pier 7."])
LONG = text_of([f"Page {number} talks about topic{number} and nothing else." for number in range(130)])


@pytest.fixture
async def collection(provider: CollectionProvider) -> DocumentCollection:  # noqa: F811
    return await provider.collection("document_text")


async def test_a_documents_spans_are_embedded_in_batches_and_stored_beside_its_text(
    collection: DocumentCollection,
) -> None:
    model = HashedEmbeddingModel(batch_size=64)
    texts = TextStore(collection)
    await texts.save(WHERE.partition_key, WHERE.document_id, WHERE.content_hash, LONG)
    vectors = SpanVectors(model, SpanVectorStore(collection))

    made = await vectors.embed_document(LONG, WHERE)

    assert len(LONG.spans) == 130 and made.shape[0] == 130
    assert [count for _, count in model.requests] == [64, 64, 2]
    fresh = SpanVectors(HashedEmbeddingModel(batch_size=64), SpanVectorStore(collection))  # another process
    loaded = await fresh.load(LONG, WHERE)
    assert loaded is not None
    np.testing.assert_allclose(loaded[5], normalized([hashed_vector(LONG.spans[5].text)])[0], atol=1e-6)
    # The text reads as before with vectors filed under its version.
    assert await texts.load(WHERE.partition_key, WHERE.document_id, WHERE.content_hash) == LONG


async def test_vectors_go_with_their_text_version_when_it_is_deleted(collection: DocumentCollection) -> None:
    texts = TextStore(collection)
    await texts.save(WHERE.partition_key, WHERE.document_id, WHERE.content_hash, LEASE)
    store = SpanVectorStore(collection)
    await SpanVectors(HashedEmbeddingModel(), store).embed_document(LEASE, WHERE)

    await texts.delete(WHERE.partition_key, WHERE.document_id)

    assert await collection.query(WHERE.partition_key, id_prefix="tx:") == []


async def test_vectors_of_another_model_or_other_spans_are_not_used() -> None:
    from orc.storage.memory import MemoryCollectionProvider

    store = SpanVectorStore(await MemoryCollectionProvider().collection("document_text"))
    first = SpanVectors(HashedEmbeddingModel(name="a"), store)
    await first.embed_document(LEASE, WHERE)
    other_model = SpanVectors(HashedEmbeddingModel(name="b"), store)

    assert await other_model.load(LEASE, WHERE) is None  # a change of model re-embeds
    assert await first.load(LEASE, WHERE) is not None
    assert await store.load(WHERE, first.store_key, LEASE.spans_hash) is not None
    assert await store.load(WHERE, first.store_key, "the hash of other spans") is None


def test_a_span_is_embedded_with_its_section_title() -> None:
    from orc.search.spans import Span
    from orc.search.vectors import embedded_text

    titled = Span(span_id="S1", page=1, start=0, end=5, text="Lines must stay short.", section="Format › Lines")

    assert embedded_text(titled) == "Format › Lines\nLines must stay short."
    assert embedded_text(LEASE.spans[0]) == LEASE.spans[0].text


class GatedModel(HashedEmbeddingModel):
    """Span requests wait for the gate: a slow or stuck embedding endpoint."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def embed(self, texts: Sequence[str], purpose: EmbeddingPurpose) -> list[list[float]]:
        if purpose == "spans":
            await self.gate.wait()
        return await super().embed(texts, purpose)


async def retriever_over(model: HashedEmbeddingModel) -> tuple[Retriever, Target]:
    """A retriever whose index holds LEASE without vectors (processed before embeddings were configured)."""
    from orc.storage.memory import MemoryCollectionProvider

    collection = await MemoryCollectionProvider().collection("document_text")
    texts = TextStore(collection)
    await texts.save(WHERE.partition_key, WHERE.document_id, WHERE.content_hash, LEASE)
    retriever = Retriever(MemorySearchEngine(), texts, SpanVectors(model, SpanVectorStore(collection)))
    scope = ScopeFields(organization="acme", owner=owner_key("session", "alice/c1"))
    target = Target(
        document_id=WHERE.document_id,
        name="lease.pdf",
        version=index_version(LEASE.extracted_text_hash, LEASE.chunking_version),
        scope=scope,
        stored=WHERE,
    )
    await retriever.index(LEASE, document_id=WHERE.document_id, scope=scope)
    return retriever, target


async def test_a_document_without_vectors_is_embedded_in_the_background_without_being_waited_for() -> None:
    model = GatedModel()
    retriever, target = await retriever_over(model)

    # Both return although the span request cannot finish; the second does not schedule it again.
    first = await retriever.retrieve("rent", "acme", [target], limit=3, query_vector=retriever.embed_query("rent"))
    again = await retriever.retrieve("rent", "acme", [target], limit=3, query_vector=retriever.embed_query("rent"))

    assert first.legs.lexical_only == again.legs.lexical_only == ["lease.pdf"]
    assert first.spans and first.spans[0].ref == "lease.pdf::S1"
    model.gate.set()
    await retriever.settle()
    assert [purpose for purpose, _ in model.requests].count("spans") == 1
    ready = await retriever.retrieve("rent", "acme", [target], limit=3, query_vector=retriever.embed_query("rent"))
    assert ready.legs.legs == ["lexical", "vector"] and ready.legs.lexical_only == []


async def test_a_failed_background_embedding_is_not_retried_on_every_turn() -> None:
    model = HashedEmbeddingModel()
    retriever, target = await retriever_over(model)
    model.failing = True

    await retriever.retrieve("rent", "acme", [target], limit=3)
    await retriever.settle()
    await retriever.retrieve("rent", "acme", [target], limit=3)
    await retriever.settle()

    assert [purpose for purpose, _ in model.requests] == ["spans"]


async def test_a_text_never_stored_is_searched_lexically_only() -> None:
    model = HashedEmbeddingModel()
    retriever, stored = await retriever_over(model)
    unstored = Target("blob:memo.txt", "memo.txt", stored.version, stored.scope, text=LEASE)

    found = await retriever.retrieve("rent", "acme", [unstored], limit=3, query_vector=retriever.embed_query("rent"))
    await retriever.settle()

    assert found.legs.lexical_only == ["memo.txt"]
    assert [purpose for purpose, _ in model.requests] == ["query"]


def test_reciprocal_rank_fusion_prefers_what_both_legs_rank_well() -> None:
    lexical = ["a", "b", "c"]
    vector = ["c", "d", "a"]

    fused = reciprocal_rank_fusion([lexical, vector], limit=3)

    assert [item for item, _ in fused] == ["a", "c", "b"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 63, abs=1e-6)  # "c" ties with "a": the first ranking decides
