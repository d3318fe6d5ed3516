"""The stored text: multi-part versions, and an incomplete version reads as absent."""

from __future__ import annotations

import pytest

from orc.extracted import ExtractedDocument
from orc.search import text_store
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
