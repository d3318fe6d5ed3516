"""Span vectors: made in batches, stored beside the text on every collection backend, keyed by the embedding model,
cached per process, made lazily (never waited for) when missing; the vector leg's ranking and the fusion."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from orc.extracted import ExtractedDocument
from orc.models.embeddings import EmbeddingPurpose
from orc.search.fusion import reciprocal_rank_fusion
from orc.search.text_store import DocumentText, TextStore, process_extracted
from orc.search.vectors import (
    SpanVectors,
    SpanVectorStore,
    VectorCache,
    VectorLocation,
    nearest,
    normalized,
)
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

    requests = await vectors.embed_document(LONG, WHERE)

    assert len(LONG.spans) == 130
    assert requests == 3 and [count for _, count in model.requests] == [64, 64, 2]
    fresh = SpanVectors(HashedEmbeddingModel(batch_size=64), SpanVectorStore(collection))  # another process
    fresh.remember(LONG, WHERE)
    (loaded,) = await fresh.matrices([LONG])
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
    other_model.remember(LEASE, WHERE)

    assert await other_model.matrices([LEASE]) == [None]  # a change of model re-embeds (in the background)
    await other_model.settle()
    assert (await other_model.matrices([LEASE]))[0] is not None
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


async def test_a_document_without_vectors_is_embedded_in_the_background_without_being_waited_for() -> None:
    from orc.storage.memory import MemoryCollectionProvider

    model = GatedModel()
    vectors = SpanVectors(model, SpanVectorStore(await MemoryCollectionProvider().collection("document_text")))
    vectors.remember(LEASE, WHERE)

    first = await vectors.matrices([LEASE])  # returns although the span request cannot finish
    again = await vectors.matrices([LEASE])  # scheduled once, not twice

    assert first == again == [None]
    model.gate.set()
    await vectors.settle()
    assert [purpose for purpose, _ in model.requests] == ["spans"]
    (ready,) = await vectors.matrices([LEASE])
    assert ready is not None and ready.shape == (3, model.dimensions)


async def test_a_failed_background_embedding_is_not_retried_on_every_turn() -> None:
    from orc.storage.memory import MemoryCollectionProvider

    model = HashedEmbeddingModel()
    model.failing = True
    vectors = SpanVectors(model, SpanVectorStore(await MemoryCollectionProvider().collection("document_text")))
    vectors.remember(LEASE, WHERE)

    await vectors.matrices([LEASE])
    await vectors.settle()
    await vectors.matrices([LEASE])
    await vectors.settle()

    assert len(model.requests) == 1


async def test_a_text_never_stored_is_searched_lexically_only() -> None:
    from orc.storage.memory import MemoryCollectionProvider

    model = HashedEmbeddingModel()
    vectors = SpanVectors(model, SpanVectorStore(await MemoryCollectionProvider().collection("document_text")))

    assert await vectors.matrices([LEASE]) == [None]
    await vectors.settle()
    assert model.requests == []


def test_the_nearest_spans_come_first_across_documents_scaled_by_weight() -> None:
    lease = normalized([hashed_vector(span.text) for span in LEASE.spans])
    query = normalized([hashed_vector("notice period days")])[0]

    hits = nearest(query, [None, lease, lease], [1.0, 1.0, 0.5], limit=2)

    assert [(hit.document, hit.span) for hit in hits] == [(1, 1), (2, 1)]
    assert hits[0].score > hits[1].score


def test_the_cache_evicts_the_least_recently_used_past_its_row_budget() -> None:
    cache = VectorCache(max_rows=5)
    three = np.zeros((3, 4), dtype=np.float32)
    cache.put(("a", "v1", "m"), three)
    cache.put(("b", "v1", "m"), three)

    assert cache.get(("a", "v1", "m")) is None and cache.get(("b", "v1", "m")) is not None


def test_reciprocal_rank_fusion_prefers_what_both_legs_rank_well() -> None:
    lexical = ["a", "b", "c"]
    vector = ["c", "d", "a"]

    fused = reciprocal_rank_fusion([lexical, vector], limit=3)

    assert [item for item, _ in fused] == ["a", "c", "b"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 63, abs=1e-6)  # "c" ties with "a": the first ranking decides
