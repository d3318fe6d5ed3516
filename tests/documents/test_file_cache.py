"""The file_id cache: reuse only for the same scope, blob and ETag, and only until the TTL passes."""

from __future__ import annotations

from orc.documents.chat.file_cache import ProcessedFileCache
from orc.extracted import ExtractedDocument
from orc.search.text_store import process_extracted
from tests.documents.doubles import FakeClock
from tests.search.ranking import target

SCOPE = "acme/alice/conv-1/"
TARGET = target(process_extracted(ExtractedDocument(pages=["Hello"], media_type="text/plain")))


def _cache(clock: FakeClock, *, max_entries: int = 10) -> ProcessedFileCache:
    return ProcessedFileCache(60.0, clock=clock, max_entries=max_entries)


def _put(cache: ProcessedFileCache, blob_name: str = "doc.pdf", etag: str = "v1", scope: str = SCOPE) -> str:
    return cache.put(scope=scope, blob_name=blob_name, etag=etag, target=TARGET).file_id


def test_a_fresh_entry_is_returned_for_its_blob_and_etag() -> None:
    clock = FakeClock()
    cache = _cache(clock)
    file_id = _put(cache)

    entry = cache.get(file_id, "doc.pdf", "v1", scope=SCOPE)

    assert file_id.startswith("file-")
    assert entry is not None
    assert entry.target == TARGET
    assert entry.expires_at == clock.now + 60.0


def test_every_put_issues_a_new_id() -> None:
    cache = _cache(FakeClock())

    assert _put(cache) != _put(cache)


def test_an_unknown_id_is_a_miss() -> None:
    assert _cache(FakeClock()).get("file-nope", "doc.pdf", "v1", scope=SCOPE) is None


def test_an_entry_expires_after_its_ttl() -> None:
    clock = FakeClock()
    cache = _cache(clock)
    file_id = _put(cache)

    clock.advance(59.9)
    assert cache.get(file_id, "doc.pdf", "v1", scope=SCOPE) is not None
    clock.advance(0.1)
    assert cache.get(file_id, "doc.pdf", "v1", scope=SCOPE) is None
    assert len(cache) == 0


def test_a_changed_blob_makes_the_entry_stale() -> None:
    cache = _cache(FakeClock())
    file_id = _put(cache, etag="v1")

    assert cache.get(file_id, "doc.pdf", "v2", scope=SCOPE) is None
    # A stale entry is dropped: even the old ETag no longer finds it.
    assert cache.get(file_id, "doc.pdf", "v1", scope=SCOPE) is None


def test_an_id_is_not_valid_for_another_blob_name() -> None:
    cache = _cache(FakeClock())
    file_id = _put(cache, blob_name="doc.pdf")

    assert cache.get(file_id, "other.pdf", "v1", scope=SCOPE) is None
    assert cache.get(file_id, "doc.pdf", "v1", scope=SCOPE) is not None


def test_an_id_is_not_valid_in_another_conversation_or_for_another_user() -> None:
    cache = _cache(FakeClock())
    file_id = _put(cache)

    assert cache.get(file_id, "doc.pdf", "v1", scope="acme/alice/conv-2/") is None
    assert cache.get(file_id, "doc.pdf", "v1", scope="acme/bob/conv-1/") is None
    assert cache.get(file_id, "doc.pdf", "v1", scope=SCOPE) is not None


def test_the_least_recently_used_entry_is_evicted_beyond_the_bound() -> None:
    cache = _cache(FakeClock(), max_entries=2)
    first = _put(cache, blob_name="a.txt")
    second = _put(cache, blob_name="b.txt")
    assert cache.get(first, "a.txt", "v1", scope=SCOPE) is not None  # touch: second is now the oldest

    third = _put(cache, blob_name="c.txt")

    assert len(cache) == 2
    assert cache.get(second, "b.txt", "v1", scope=SCOPE) is None
    assert cache.get(first, "a.txt", "v1", scope=SCOPE) is not None
    assert cache.get(third, "c.txt", "v1", scope=SCOPE) is not None


def test_expired_entries_are_dropped_when_new_ones_arrive() -> None:
    clock = FakeClock()
    cache = _cache(clock)
    _put(cache, blob_name="old.txt")
    clock.advance(61)

    _put(cache, blob_name="new.txt")

    assert len(cache) == 1


def test_an_expired_entry_is_dropped_on_arrivals_even_when_it_was_used_since_newer_ones_came() -> None:
    clock = FakeClock()
    cache = _cache(clock)
    old = _put(cache, blob_name="old.txt")
    clock.advance(30)
    newer = _put(cache, blob_name="newer.txt")
    assert cache.get(old, "old.txt", "v1", scope=SCOPE) is not None  # now the most recently used
    clock.advance(31)

    _put(cache, blob_name="new.txt")

    # The old entry expired (61 s) though it was used last; the newer one has 29 s to go.
    assert len(cache) == 2
    assert cache.get(newer, "newer.txt", "v1", scope=SCOPE) is not None


def test_expiry_stays_right_after_many_entries_left_by_eviction_and_discard() -> None:
    clock = FakeClock()
    cache = _cache(clock, max_entries=2)
    for number in range(7):
        file_id = _put(cache, blob_name=f"doc{number}.txt")
        clock.advance(1)
    cache.discard(file_id, scope=SCOPE)
    survivor = _put(cache, blob_name="survivor.txt")
    clock.advance(55)
    assert cache.get(survivor, "survivor.txt", "v1", scope=SCOPE) is not None

    clock.advance(5)
    latest = _put(cache, blob_name="latest.txt")

    assert len(cache) == 1
    assert cache.get(latest, "latest.txt", "v1", scope=SCOPE) is not None


def test_another_instance_honours_an_id_for_the_same_scope_blob_and_etag_until_it_expires() -> None:
    clock = FakeClock()
    file_id = _put(_cache(clock))
    elsewhere = _cache(clock)

    assert elsewhere.get(file_id, "doc.pdf", "v1", scope=SCOPE) is None  # it holds no copy of the file ...
    assert elsewhere.honours(file_id, "doc.pdf", "v1", scope=SCOPE)  # ... but knows the id is good
    assert not elsewhere.honours(file_id, "doc.pdf", "v2", scope=SCOPE)
    assert not elsewhere.honours(file_id, "other.pdf", "v1", scope=SCOPE)
    assert not elsewhere.honours(file_id, "doc.pdf", "v1", scope="acme/bob/conv-1/")
    clock.advance(60)
    assert not elsewhere.honours(file_id, "doc.pdf", "v1", scope=SCOPE)


def test_an_honoured_id_is_kept_with_its_issuers_expiry_and_a_made_up_one_is_replaced() -> None:
    clock = FakeClock()
    file_id = _put(_cache(clock))
    clock.advance(20)
    elsewhere = _cache(clock)

    adopted = elsewhere.put(scope=SCOPE, blob_name="doc.pdf", etag="v1", target=TARGET, file_id=file_id)
    made_up = elsewhere.put(scope=SCOPE, blob_name="doc.pdf", etag="v1", target=TARGET, file_id="file-1.ffffffffff.00")

    assert adopted.file_id == file_id and adopted.expires_at <= clock.now + 40
    assert elsewhere.get(file_id, "doc.pdf", "v1", scope=SCOPE) is adopted
    assert made_up.file_id != "file-1.ffffffffff.00"


def test_ids_that_are_not_ours_are_never_honoured() -> None:
    cache = _cache(FakeClock())

    for file_id in ("file-nope", "file-a.b.c", "file-a.zz.c", "nope", "file-" + "." * 5):
        assert not cache.honours(file_id, "doc.pdf", "v1", scope=SCOPE)
