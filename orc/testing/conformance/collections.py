"""The :class:`~orc.storage.ports.DocumentCollection` and :class:`~orc.storage.ports.CollectionProvider`
contract as a pytest suite a backend subclasses, the way LangGraph ships its checkpointer conformance tests.

Every rule in the ports' docstrings is a test here; orc runs the suite against memory, SQLite and Cosmos DB
(``tests/storage/test_collection_conformance.py``). A third-party backend subclasses :class:`CollectionConformance`
in a test module and supplies a ``provider`` fixture that yields a fresh provider and closes it afterwards::

    import pytest_asyncio

    from orc.testing.conformance import CollectionConformance
    from my_backend import MyCollectionProvider


    class TestMyCollections(CollectionConformance):
        @pytest_asyncio.fixture
        async def provider(self):
            made = MyCollectionProvider(...)
            yield made
            await made.aclose()

A parametrized ``provider`` fixture (``params=[...]``) runs the whole suite once per backend. Each test asks the
provider for a collection with a fresh name, so providers may share one database. Needs pytest and
pytest-asyncio; this module is imported only by test code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest
import pytest_asyncio

from orc.errors import ETagMismatch, ItemAlreadyExists, ItemNotFound
from orc.storage.ports import CollectionProvider, DocumentCollection, StoredItem
from orc.testing.storage import unique_name

__all__ = ["CollectionConformance"]

PK = "org-1/user-1"
OTHER_PK = "org-1/user-2"


async def outcomes(calls: list[Awaitable[StoredItem]]) -> tuple[list[StoredItem], list[BaseException]]:
    """Run calls concurrently; split what they returned from what they raised."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    won = [r for r in results if isinstance(r, StoredItem)]
    lost = [r for r in results if isinstance(r, BaseException)]
    return won, lost


async def fill(collection: DocumentCollection) -> None:
    await collection.create(PK, "doc-1", {"kind": "doc", "n": 3, "open": True, "title": "c"})
    await collection.create(PK, "doc-2", {"kind": "doc", "n": 1, "open": False, "title": "a"})
    await collection.create(PK, "doc-3", {"kind": "doc", "n": 2, "open": True, "title": "b"})
    await collection.create(PK, "note-1", {"kind": "note", "n": 5, "open": True, "title": "e"})
    await collection.create(OTHER_PK, "doc-9", {"kind": "doc", "n": 0, "open": True, "title": "z"})


def ids(items: list[StoredItem]) -> list[str]:
    return [item.id for item in items]


class CollectionConformance:
    """The collection contract; subclass it and provide a ``provider`` fixture (see the module docstring)."""

    pytestmark = pytest.mark.asyncio

    @pytest_asyncio.fixture
    async def collection(self, provider: CollectionProvider) -> DocumentCollection:
        """A fresh, empty collection of the backend under test."""
        return await provider.collection(unique_name())

    # -- get / create ------------------------------------------------------------------------------------------

    async def test_getting_a_missing_item_returns_none(self, collection: DocumentCollection) -> None:
        assert await collection.get(PK, "missing") is None

    async def test_a_created_item_can_be_read_back(self, collection: DocumentCollection) -> None:
        created = await collection.create(PK, "a", {"title": "hello", "n": 1})

        read = await collection.get(PK, "a")

        assert created.id == "a" and created.partition_key == PK
        assert created.body == {"title": "hello", "n": 1}
        assert created.etag
        assert read == created

    async def test_creating_an_existing_id_is_refused(self, collection: DocumentCollection) -> None:
        await collection.create(PK, "a", {"v": 1})

        with pytest.raises(ItemAlreadyExists):
            await collection.create(PK, "a", {"v": 2})

        stored = await collection.get(PK, "a")
        assert stored is not None and stored.body == {"v": 1}

    async def test_the_same_id_in_two_partitions_are_two_items(self, collection: DocumentCollection) -> None:
        await collection.create(PK, "a", {"owner": "one"})
        await collection.create(OTHER_PK, "a", {"owner": "two"})

        first, second = await collection.get(PK, "a"), await collection.get(OTHER_PK, "a")

        assert first is not None and first.body == {"owner": "one"}
        assert second is not None and second.body == {"owner": "two"}
        assert await collection.delete(PK, "a") is True
        assert await collection.get(OTHER_PK, "a") is not None

    async def test_bodies_come_back_as_copies_not_as_the_callers_objects(self, collection: DocumentCollection) -> None:
        body = {"tags": ["a"]}
        created = await collection.create(PK, "a", body)
        body["tags"].append("changed-after-create")
        created.body["tags"].append("changed-after-read")

        stored = await collection.get(PK, "a")

        assert stored is not None and stored.body == {"tags": ["a"]}

    async def test_unicode_and_nested_json_round_trip(self, collection: DocumentCollection) -> None:
        body = {
            "title": "Résumé — 東京 🚀 «quotes» \"double\" 'single' \\ back",
            "nested": {"list": [1, 2.5, True, None, {"deep": ["x", {"deeper": "ü"}]}], "empty": {}},
            "negative": -42,
            "big": 2**53,
            "flag": False,
            "nothing": None,
        }

        await collection.create(PK, "ünïcode-ïd", body)

        stored = await collection.get(PK, "ünïcode-ïd")
        assert stored is not None and stored.body == body

    @pytest.mark.parametrize("bad_id", ["", "a/b", "a\\b", "a?b", "a#b", "tab\there", "x" * 256])
    async def test_ids_that_cosmos_db_would_refuse_are_refused_everywhere(
        self, collection: DocumentCollection, bad_id: str
    ) -> None:
        with pytest.raises(ValueError):
            await collection.create(PK, bad_id, {})

    # -- replace / upsert --------------------------------------------------------------------------------------

    async def test_replace_with_the_current_etag_succeeds_with_a_new_etag(self, collection: DocumentCollection) -> None:
        created = await collection.create(PK, "a", {"v": 1})

        replaced = await collection.replace(PK, "a", {"v": 2}, if_match=created.etag)

        assert replaced.body == {"v": 2}
        assert replaced.etag != created.etag
        assert await collection.get(PK, "a") == replaced

    async def test_replace_with_a_stale_etag_is_refused(self, collection: DocumentCollection) -> None:
        created = await collection.create(PK, "a", {"v": 1})
        await collection.replace(PK, "a", {"v": 2}, if_match=created.etag)

        with pytest.raises(ETagMismatch):
            await collection.replace(PK, "a", {"v": 3}, if_match=created.etag)

        stored = await collection.get(PK, "a")
        assert stored is not None and stored.body == {"v": 2}

    async def test_replace_without_if_match_overwrites(self, collection: DocumentCollection) -> None:
        await collection.create(PK, "a", {"v": 1})

        replaced = await collection.replace(PK, "a", {"v": 2})

        assert replaced.body == {"v": 2}

    async def test_replacing_a_missing_item_raises_item_not_found(self, collection: DocumentCollection) -> None:
        with pytest.raises(ItemNotFound):
            await collection.replace(PK, "missing", {"v": 1})

    async def test_replacing_an_item_of_another_partition_raises_item_not_found(
        self,
        collection: DocumentCollection,
    ) -> None:
        await collection.create(OTHER_PK, "a", {"v": 1})

        with pytest.raises(ItemNotFound):
            await collection.replace(PK, "a", {"v": 2})

    async def test_upsert_creates_a_missing_item(self, collection: DocumentCollection) -> None:
        stored = await collection.upsert(PK, "a", {"v": 1})

        assert await collection.get(PK, "a") == stored

    async def test_upsert_overwrites_an_existing_item_with_a_new_etag(self, collection: DocumentCollection) -> None:
        created = await collection.create(PK, "a", {"v": 1, "gone": True})

        upserted = await collection.upsert(PK, "a", {"v": 2})

        assert upserted.body == {"v": 2}
        assert upserted.etag != created.etag
        assert await collection.get(PK, "a") == upserted

    async def test_every_write_returns_a_new_etag(self, collection: DocumentCollection) -> None:
        etags = [
            (await collection.create(PK, "a", {"v": 0})).etag,
            (await collection.replace(PK, "a", {"v": 0})).etag,
            (await collection.upsert(PK, "a", {"v": 0})).etag,
            (await collection.upsert(PK, "a", {"v": 0})).etag,
        ]

        assert all(isinstance(etag, str) and etag for etag in etags)
        assert len(set(etags)) == len(etags)

    # -- delete ------------------------------------------------------------------------------------------------

    async def test_deleting_a_missing_item_returns_false(self, collection: DocumentCollection) -> None:
        assert await collection.delete(PK, "missing") is False

    async def test_delete_removes_the_item(self, collection: DocumentCollection) -> None:
        await collection.create(PK, "a", {})

        assert await collection.delete(PK, "a") is True
        assert await collection.get(PK, "a") is None
        assert await collection.delete(PK, "a") is False

    async def test_delete_with_the_current_etag_removes_the_item(self, collection: DocumentCollection) -> None:
        created = await collection.create(PK, "a", {})

        assert await collection.delete(PK, "a", if_match=created.etag) is True
        assert await collection.get(PK, "a") is None

    async def test_delete_with_a_stale_etag_is_refused(self, collection: DocumentCollection) -> None:
        created = await collection.create(PK, "a", {"v": 1})
        await collection.upsert(PK, "a", {"v": 2})

        with pytest.raises(ETagMismatch):
            await collection.delete(PK, "a", if_match=created.etag)

        assert await collection.get(PK, "a") is not None

    async def test_a_deleted_id_can_be_created_again(self, collection: DocumentCollection) -> None:
        await collection.create(PK, "a", {"v": 1})
        await collection.delete(PK, "a")

        again = await collection.create(PK, "a", {"v": 2})

        assert again.body == {"v": 2}

    # -- query -------------------------------------------------------------------------------------------------

    async def test_query_stays_inside_the_partition(self, collection: DocumentCollection) -> None:
        await fill(collection)

        found = await collection.query(PK)

        assert ids(found) == ["doc-1", "doc-2", "doc-3", "note-1"]
        assert all(item.partition_key == PK for item in found)
        assert ids(await collection.query(OTHER_PK)) == ["doc-9"]

    async def test_query_results_carry_bodies_and_etags(self, collection: DocumentCollection) -> None:
        created = await collection.create(PK, "a", {"v": {"nested": [1]}})

        assert await collection.query(PK) == [created]

    async def test_query_where_matches_strings(self, collection: DocumentCollection) -> None:
        await fill(collection)

        assert ids(await collection.query(PK, where={"kind": "note"})) == ["note-1"]

    async def test_query_where_matches_integers(self, collection: DocumentCollection) -> None:
        await fill(collection)

        assert ids(await collection.query(PK, where={"n": 2})) == ["doc-3"]

    async def test_query_where_matches_booleans(self, collection: DocumentCollection) -> None:
        await fill(collection)

        assert ids(await collection.query(PK, where={"open": False})) == ["doc-2"]
        assert ids(await collection.query(PK, where={"open": True, "kind": "doc"})) == ["doc-1", "doc-3"]

    async def test_query_where_compares_json_types_strictly(self, collection: DocumentCollection) -> None:
        await collection.create(PK, "true", {"v": True})
        await collection.create(PK, "one", {"v": 1})
        await collection.create(PK, "one-float", {"v": 1.0})
        await collection.create(PK, "text", {"v": "1"})
        await collection.create(PK, "null", {"v": None})
        await collection.create(PK, "absent", {})

        assert ids(await collection.query(PK, where={"v": True})) == ["true"]
        assert ids(await collection.query(PK, where={"v": 1})) == ["one", "one-float"]
        assert ids(await collection.query(PK, where={"v": "1"})) == ["text"]
        assert ids(await collection.query(PK, where={"v": None})) == ["null"]

    async def test_query_filters_ids_by_prefix(self, collection: DocumentCollection) -> None:
        await fill(collection)
        await collection.create(PK, "DOC-upper", {})
        await collection.create(PK, "doc_x", {})

        assert ids(await collection.query(PK, id_prefix="doc-")) == ["doc-1", "doc-2", "doc-3"]

    async def test_query_orders_by_a_field_ascending_with_a_limit(self, collection: DocumentCollection) -> None:
        await fill(collection)

        found = await collection.query(PK, order_by="n", limit=2)

        assert ids(found) == ["doc-2", "doc-3"]

    async def test_query_orders_by_a_field_descending_with_a_limit(self, collection: DocumentCollection) -> None:
        await fill(collection)

        found = await collection.query(PK, where={"kind": "doc"}, order_by="n", descending=True, limit=2)

        assert ids(found) == ["doc-1", "doc-3"]

    async def test_query_orders_strings(self, collection: DocumentCollection) -> None:
        await fill(collection)

        assert ids(await collection.query(PK, order_by="title")) == ["doc-2", "doc-3", "doc-1", "note-1"]

    async def test_query_breaks_ties_by_id_in_the_same_direction(self, collection: DocumentCollection) -> None:
        for item_id, rank in [("e", 2), ("b", 1), ("d", 1), ("a", 2), ("c", 1), ("f", 0)]:
            await collection.create(PK, item_id, {"rank": rank})

        ascending = await collection.query(PK, order_by="rank")
        descending = await collection.query(PK, order_by="rank", descending=True)

        assert ids(ascending) == ["f", "b", "c", "d", "a", "e"]
        assert ids(descending) == list(reversed(ids(ascending)))

    async def test_query_breaks_ties_at_the_limit_boundary_by_id(self, collection: DocumentCollection) -> None:
        for item_id in ["k", "h", "m", "i", "j", "l"]:
            await collection.create(PK, item_id, {"rank": 1})
        await collection.create(PK, "a", {"rank": 0})

        assert ids(await collection.query(PK, order_by="rank", limit=3)) == ["a", "h", "i"]
        assert ids(await collection.query(PK, order_by="rank", descending=True, limit=2)) == ["m", "l"]

    async def test_query_ordered_by_a_field_leaves_out_items_without_it(self, collection: DocumentCollection) -> None:
        await collection.create(PK, "with", {"at": "2024"})
        await collection.create(PK, "without", {"other": 1})

        assert ids(await collection.query(PK, order_by="at")) == ["with"]

    async def test_query_without_order_by_returns_items_in_id_order(self, collection: DocumentCollection) -> None:
        for item_id in ["b", "c", "a"]:
            await collection.create(PK, item_id, {})

        assert ids(await collection.query(PK)) == ["a", "b", "c"]
        assert ids(await collection.query(PK, descending=True, limit=2)) == ["c", "b"]

    async def test_query_with_nothing_matching_returns_an_empty_list(self, collection: DocumentCollection) -> None:
        await fill(collection)

        assert await collection.query("nobody") == []
        assert await collection.query(PK, where={"kind": "absent"}) == []
        assert await collection.query(PK, id_prefix="zzz") == []
        assert await collection.query(PK, limit=0) == []

    async def test_query_refuses_field_names_that_are_not_identifiers(self, collection: DocumentCollection) -> None:
        with pytest.raises(ValueError):
            await collection.query(PK, where={"a.b": 1})
        with pytest.raises(ValueError):
            await collection.query(PK, order_by='x"] OR 1=1 --')

    # -- concurrency -------------------------------------------------------------------------------------------

    async def test_concurrent_creates_of_one_id_have_exactly_one_winner(self, collection: DocumentCollection) -> None:
        won, lost = await outcomes([collection.create(PK, "race", {"writer": i}) for i in range(20)])

        assert len(won) == 1
        assert len(lost) == 19 and all(isinstance(error, ItemAlreadyExists) for error in lost)
        stored = await collection.get(PK, "race")
        assert stored == won[0]

    async def test_concurrent_replaces_with_one_etag_have_exactly_one_winner(
        self,
        collection: DocumentCollection,
    ) -> None:
        created = await collection.create(PK, "race", {"writer": None})

        won, lost = await outcomes(
            [collection.replace(PK, "race", {"writer": i}, if_match=created.etag) for i in range(20)]
        )

        assert len(won) == 1
        assert len(lost) == 19 and all(isinstance(error, ETagMismatch) for error in lost)
        assert await collection.get(PK, "race") == won[0]

    # -- provider ----------------------------------------------------------------------------------------------

    async def test_a_provider_hands_out_the_same_collection_for_the_same_name(
        self, provider: CollectionProvider
    ) -> None:
        name = unique_name()
        first = await provider.collection(name)
        await first.create(PK, "a", {"v": 1})

        again = await provider.collection(name)

        assert await again.get(PK, "a") is not None

    async def test_collections_with_different_names_are_independent(self, provider: CollectionProvider) -> None:
        one, two = await provider.collection(unique_name()), await provider.collection(unique_name())
        await one.create(PK, "a", {"v": 1})

        assert await two.get(PK, "a") is None
        assert await two.query(PK) == []

    async def test_a_provider_refuses_collection_names_that_are_not_portable(
        self, provider: CollectionProvider
    ) -> None:
        with pytest.raises(ValueError):
            await provider.collection("no/slashes")
