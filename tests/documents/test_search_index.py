"""The stored text (multi-part, incomplete versions) and BM25 over the union of several documents' spans."""

from __future__ import annotations

import pytest

from orc.extracted import ExtractedDocument
from orc.search import text_store
from orc.search.span_index import IndexCache, bm25, build_index, index_key
from orc.search.text_store import TextStore, process_extracted
from orc.storage.memory import MemoryCollection

LONG = ExtractedDocument(
    pages=[f"Page {n} paragraph about topic {n}.\n\n" + "filler words " * 200 for n in range(1, 6)],
    media_type="application/pdf",
)


async def test_a_long_text_round_trips_through_several_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_store, "PART_CHARS", 1000)
    collection = MemoryCollection("document_text")
    store = TextStore(collection)
    text = process_extracted(LONG)

    await store.save("p", "doc-1", "c" * 64, text)
    items = await collection.query("p")
    loaded = await store.load("p", "doc-1", "c" * 64)

    assert len(items) > 5
    assert loaded == text
    assert loaded is not None and loaded.text == text.text
    for index in range(len(text.spans)):
        start, end = loaded.span_offsets(index)
        assert loaded.text[start:end] == loaded.spans[index].text


async def test_a_version_missing_a_part_reads_as_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_store, "PART_CHARS", 1000)
    collection = MemoryCollection("document_text")
    store = TextStore(collection)
    await store.save("p", "doc-1", "c" * 64, process_extracted(LONG))
    items = await collection.query("p")
    await collection.delete("p", items[-1].id)

    assert await store.load("p", "doc-1", "c" * 64) is None


def test_bm25_ranks_across_documents_with_shared_statistics() -> None:
    first = build_index(
        process_extracted(ExtractedDocument(pages=["The rent is 900 euros per month."], media_type="text/plain"))
    )
    second = build_index(
        process_extracted(
            ExtractedDocument(pages=["Vacation policy: 25 days. Rent subsidies exist."], media_type="text/plain")
        )
    )

    hits = bm25("rent euros", [first, second], [1.0, 1.0], limit=5)

    assert [(hit.document, hit.span) for hit in hits] == [(0, 0), (1, 0)]
    assert hits[0].score > hits[1].score


def test_a_lower_weight_moves_a_document_down_at_equal_relevance() -> None:
    text = "The deposit is two months of rent."
    one = build_index(process_extracted(ExtractedDocument(pages=[text], media_type="text/plain")))

    hits = bm25("deposit", [one, one], [0.85, 1.0], limit=2)

    assert [hit.document for hit in hits] == [1, 0]


def test_a_query_of_stop_words_finds_nothing() -> None:
    one = build_index(process_extracted(ExtractedDocument(pages=["Anything at all."], media_type="text/plain")))

    assert bm25("what is the", [one], [1.0], limit=5) == []


def test_the_index_cache_evicts_the_least_recently_used_past_its_span_budget() -> None:
    cache = IndexCache(max_spans=2)
    indexes = [
        build_index(process_extracted(ExtractedDocument(pages=[f"Text number {n}."], media_type="text/plain")))
        for n in range(3)
    ]
    cache.put(indexes[0])
    cache.put(indexes[1])
    assert cache.get(index_key(indexes[0].text)) is not None  # 0 is now the most recent
    cache.put(indexes[2])

    assert cache.get(index_key(indexes[1].text)) is None
    assert len(cache) == 2
