"""Stored digests: inline or split into parts under the item size cap, keyed by the cache key, deletable."""

from __future__ import annotations

from orc.digests.store import DigestStore, file_digest_key
from orc.storage.memory import MemoryCollectionProvider

PK = "acme/alice"
DIGEST = {"summary": "é" * 50, "facts": [{"claim": "x" * 30, "sources": ["a.txt::S1"]}]}


async def test_a_big_digest_is_split_into_parts_and_read_back_whole() -> None:
    items = await MemoryCollectionProvider().collection("digests")
    store = DigestStore(items, inline_chars=40, part_chars=25)
    key = file_digest_key("text-hash", "1", "v1.4")

    ref = await store.save_file_digest(PK, key, DIGEST, {"filename": "a.txt"})
    loaded = await store.file_digest(PK, key)

    assert loaded is not None and loaded.digest == DIGEST and loaded.meta["filename"] == "a.txt"
    assert len(await items.query(PK, id_prefix=ref)) > 2
    await store.delete(PK, ref)
    assert await items.query(PK, id_prefix=ref) == []


async def test_the_cache_key_changes_with_each_of_its_three_parts() -> None:
    base = file_digest_key("t", "1", "v1.4")

    assert (
        len(
            {
                base,
                file_digest_key("u", "1", "v1.4"),
                file_digest_key("t", "2", "v1.4"),
                file_digest_key("t", "1", "v1.5"),
            }
        )
        == 4
    )


async def test_only_the_newest_aggregate_of_a_session_is_kept() -> None:
    items = await MemoryCollectionProvider().collection("digests")
    store = DigestStore(items, inline_chars=40, part_chars=25)
    old = await store.save_aggregate(PK, "conv-1", "a" * 64, DIGEST, {})
    new = await store.save_aggregate(PK, "conv-1", "b" * 64, {"summary": "small"}, {})
    other = await store.save_aggregate(PK, "conv-10", "c" * 64, {"summary": "other session"}, {})

    await store.delete_aggregates(PK, "conv-1", keep=new)

    assert await store.load(PK, old) is None
    assert await store.load(PK, new) is not None and await store.load(PK, other) is not None
    assert [item.id for item in await items.query(PK, id_prefix=old)] == []
