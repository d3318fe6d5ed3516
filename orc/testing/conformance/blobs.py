"""The :class:`~orc.storage.ports.BlobStore` contract as a pytest suite a backend subclasses, the way LangGraph
ships its checkpointer conformance tests.

Every rule in the port's docstring is a test here; orc runs the suite against memory, a local folder and Azure
Blob Storage (``tests/storage/test_blob_conformance.py``). A third-party backend subclasses :class:`BlobConformance`
in a test module and supplies a ``blobs`` fixture that yields a fresh, empty store and closes it afterwards::

    import pytest_asyncio

    from orc.testing.conformance import BlobConformance
    from my_backend import MyBlobStore


    class TestMyBlobs(BlobConformance):
        @pytest_asyncio.fixture
        async def blobs(self, tmp_path):
            store = MyBlobStore(tmp_path)
            yield store
            await store.aclose()

A parametrized ``blobs`` fixture (``params=[...]``) runs the whole suite once per backend. Needs pytest and
pytest-asyncio; this module is imported only by test code.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from orc.errors import ETagMismatch, ItemAlreadyExists, ItemNotFound
from orc.storage.ports import BlobInfo, BlobStore

__all__ = ["BlobConformance"]

NAME = "org-1/user-1/conv-1/report.pdf"


class BlobConformance:
    """The blob store contract; subclass it and provide a ``blobs`` fixture (see the module docstring)."""

    pytestmark = pytest.mark.asyncio

    # -- put / get ---------------------------------------------------------------------------------------------

    async def test_a_put_blob_can_be_read_back_with_its_info(self, blobs: BlobStore) -> None:
        put = await blobs.put(NAME, b"%PDF-1.7 hello", content_type="application/pdf")

        data, info = await blobs.get(NAME)

        assert data == b"%PDF-1.7 hello"
        assert put.name == info.name == NAME
        assert put.size == info.size == len(data)
        assert put.etag == info.etag and info.etag
        assert info.content_type == "application/pdf"
        assert info.last_modified is not None

    async def test_head_describes_a_blob_without_reading_it(self, blobs: BlobStore) -> None:
        put = await blobs.put(NAME, b"12345", content_type="text/plain", metadata={"sha256": "abc"})

        info = await blobs.head(NAME)

        assert info is not None
        assert (info.name, info.size, info.etag, info.content_type) == (NAME, 5, put.etag, "text/plain")
        assert dict(info.metadata) == {"sha256": "abc"}

    async def test_head_of_a_missing_blob_returns_none(self, blobs: BlobStore) -> None:
        assert await blobs.head("org-1/missing.txt") is None

    async def test_get_of_a_missing_blob_raises_item_not_found(self, blobs: BlobStore) -> None:
        with pytest.raises(ItemNotFound):
            await blobs.get("org-1/missing.txt")

    async def test_content_type_and_metadata_round_trip(self, blobs: BlobStore) -> None:
        metadata = {"sha256": "0f" * 32, "original_name": "Report (final) v2.pdf", "empty": ""}
        await blobs.put(NAME, b"x", content_type="application/pdf", metadata=metadata)

        _, got = await blobs.get(NAME)
        (listed,) = await blobs.list("org-1/")

        assert got.content_type == listed.content_type == "application/pdf"
        assert dict(got.metadata) == dict(listed.metadata) == metadata

    async def test_the_default_content_type_is_octet_stream(self, blobs: BlobStore) -> None:
        await blobs.put(NAME, b"x")

        _, info = await blobs.get(NAME)

        assert info.content_type == "application/octet-stream"

    async def test_overwriting_replaces_bytes_content_type_and_metadata_and_changes_the_etag(
        self,
        blobs: BlobStore,
    ) -> None:
        first = await blobs.put(NAME, b"one", content_type="text/plain", metadata={"v": "1"})

        second = await blobs.put(NAME, b"second", content_type="text/markdown")

        data, info = await blobs.get(NAME)
        assert data == b"second"
        assert second.etag != first.etag and info.etag == second.etag
        assert info.content_type == "text/markdown"
        assert dict(info.metadata) == {}

    async def test_a_one_mebibyte_binary_blob_round_trips(self, blobs: BlobStore) -> None:
        payload = os.urandom(1024 * 1024) + bytes(range(256))

        put = await blobs.put(NAME, payload)
        data, info = await blobs.get(NAME)

        assert data == payload
        assert put.size == info.size == len(payload)

    async def test_an_empty_blob_round_trips(self, blobs: BlobStore) -> None:
        await blobs.put(NAME, b"")

        data, info = await blobs.get(NAME)

        assert data == b"" and info.size == 0

    async def test_unicode_names_round_trip(self, blobs: BlobStore) -> None:
        name = "org-1/user-1/conv-1/Résumé 東京 (1).txt"
        await blobs.put(name, "ü".encode())

        data, _ = await blobs.get(name)

        assert data == "ü".encode()
        assert [info.name for info in await blobs.list("org-1/")] == [name]

    # -- list --------------------------------------------------------------------------------------------------

    async def test_list_returns_the_blobs_under_a_prefix_sorted_by_name(self, blobs: BlobStore) -> None:
        for name in ["a/2/z.txt", "a/1/b.txt", "a/1/a.txt", "a/10.txt", "ab/x.txt", "b/a.txt"]:
            await blobs.put(name, name.encode())

        listed = await blobs.list("a/")

        assert [info.name for info in listed] == ["a/1/a.txt", "a/1/b.txt", "a/10.txt", "a/2/z.txt"]
        assert all(isinstance(info, BlobInfo) and info.size == len(info.name) for info in listed)

    async def test_list_matches_partial_names_too(self, blobs: BlobStore) -> None:
        for name in ["a/report-1.pdf", "a/report-2.pdf", "a/summary.pdf", "a/reports/x.pdf"]:
            await blobs.put(name, b"x")

        listed = await blobs.list("a/report-")

        assert [info.name for info in listed] == ["a/report-1.pdf", "a/report-2.pdf"]

    async def test_list_of_an_unknown_prefix_is_empty(self, blobs: BlobStore) -> None:
        await blobs.put(NAME, b"x")

        assert list(await blobs.list("nobody/")) == []

    async def test_list_with_an_empty_prefix_returns_every_blob(self, blobs: BlobStore) -> None:
        await blobs.put("b/two", b"2")
        await blobs.put("a/one", b"1")

        assert [info.name for info in await blobs.list("")] == ["a/one", "b/two"]

    async def test_list_reports_etags_that_match_the_blobs(self, blobs: BlobStore) -> None:
        put = await blobs.put(NAME, b"x")

        (listed,) = await blobs.list("org-1/")

        assert listed.etag == put.etag

    # -- delete ------------------------------------------------------------------------------------------------

    async def test_delete_removes_a_blob(self, blobs: BlobStore) -> None:
        await blobs.put(NAME, b"x")

        assert await blobs.delete(NAME) is True
        assert await blobs.head(NAME) is None
        assert list(await blobs.list("org-1/")) == []

    async def test_deleting_a_missing_blob_returns_false(self, blobs: BlobStore) -> None:
        assert await blobs.delete("org-1/missing.txt") is False

    async def test_deleting_one_blob_leaves_its_neighbours(self, blobs: BlobStore) -> None:
        await blobs.put("a/b/one", b"1")
        await blobs.put("a/b/two", b"2")
        await blobs.put("a/c/three", b"3")

        await blobs.delete("a/b/one")

        assert [info.name for info in await blobs.list("a/")] == ["a/b/two", "a/c/three"]

    # -- conditions --------------------------------------------------------------------------------------------

    async def test_if_none_match_creates_a_missing_blob(self, blobs: BlobStore) -> None:
        await blobs.put(NAME, b"first", if_none_match=True)

        data, _ = await blobs.get(NAME)
        assert data == b"first"

    async def test_if_none_match_on_an_existing_blob_is_refused(self, blobs: BlobStore) -> None:
        await blobs.put(NAME, b"first")

        with pytest.raises(ItemAlreadyExists):
            await blobs.put(NAME, b"second", if_none_match=True)

        data, _ = await blobs.get(NAME)
        assert data == b"first"

    async def test_if_match_with_the_current_etag_overwrites(self, blobs: BlobStore) -> None:
        first = await blobs.put(NAME, b"first")

        second = await blobs.put(NAME, b"second", if_match=first.etag)

        data, info = await blobs.get(NAME)
        assert data == b"second" and info.etag == second.etag != first.etag

    async def test_if_match_with_a_stale_etag_is_refused(self, blobs: BlobStore) -> None:
        first = await blobs.put(NAME, b"first")
        await blobs.put(NAME, b"second")

        with pytest.raises(ETagMismatch):
            await blobs.put(NAME, b"third", if_match=first.etag)

        data, _ = await blobs.get(NAME)
        assert data == b"second"

    async def test_if_match_on_a_missing_blob_raises_item_not_found(self, blobs: BlobStore) -> None:
        first = await blobs.put(NAME, b"first")
        await blobs.delete(NAME)

        with pytest.raises(ItemNotFound):
            await blobs.put(NAME, b"again", if_match=first.etag)

        assert await blobs.head(NAME) is None

    async def test_if_match_and_if_none_match_together_are_refused(self, blobs: BlobStore) -> None:
        with pytest.raises(ValueError):
            await blobs.put(NAME, b"x", if_match="etag", if_none_match=True)

    async def test_concurrent_if_none_match_puts_have_exactly_one_winner(self, blobs: BlobStore) -> None:
        results = await asyncio.gather(
            *[blobs.put(NAME, f"writer {i}".encode(), if_none_match=True) for i in range(10)],
            return_exceptions=True,
        )

        won = [r for r in results if isinstance(r, BlobInfo)]
        lost = [r for r in results if isinstance(r, BaseException)]
        assert len(won) == 1
        assert len(lost) == 9 and all(isinstance(error, ItemAlreadyExists) for error in lost)
        _, info = await blobs.get(NAME)
        assert info.etag == won[0].etag

    async def test_concurrent_if_match_puts_have_exactly_one_winner(self, blobs: BlobStore) -> None:
        first = await blobs.put(NAME, b"first")

        results = await asyncio.gather(
            *[blobs.put(NAME, f"writer {i}".encode(), if_match=first.etag) for i in range(10)],
            return_exceptions=True,
        )

        won = [r for r in results if isinstance(r, BlobInfo)]
        lost = [r for r in results if isinstance(r, BaseException)]
        assert len(won) == 1
        assert len(lost) == 9 and all(isinstance(error, ETagMismatch) for error in lost)

    @pytest.mark.parametrize("metadata", [{"Upper": "x"}, {"with-dash": "x"}, {"k": "non-ascii é"}, {"k": " pad"}])
    async def test_metadata_that_would_not_survive_http_headers_is_refused(
        self, blobs: BlobStore, metadata: dict[str, str]
    ) -> None:
        with pytest.raises(ValueError):
            await blobs.put(NAME, b"x", metadata=metadata)
