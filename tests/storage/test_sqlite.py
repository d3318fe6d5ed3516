"""What the SQLite backend promises beyond the port: a durable file, one table, recorded migrations."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from orc.errors import ItemAlreadyExists
from orc.storage.ports import DocumentCollection, StoredItem
from orc.storage.sqlite import MIGRATIONS, SqliteCollectionProvider, migrate, prefix_end, select_statement

PK = "org/user"


async def test_data_survives_closing_and_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "orc.sqlite3"
    first = SqliteCollectionProvider(path)
    created = await (await first.collection("conversations")).create(PK, "a", {"title": "kept"})
    await first.aclose()

    second = SqliteCollectionProvider(path)
    try:
        assert await (await second.collection("conversations")).get(PK, "a") == created
    finally:
        await second.aclose()


async def test_the_file_and_its_folder_are_created_on_first_use_only(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "folder" / "orc.sqlite3"
    provider = SqliteCollectionProvider(path)
    try:
        collection = await provider.collection("catalog")
        assert not path.exists()

        await collection.upsert(PK, "a", {})

        assert path.is_file()
    finally:
        await provider.aclose()


async def test_every_migration_is_recorded_once_and_not_rerun_on_reopen(tmp_path: Path) -> None:
    path = tmp_path / "orc.sqlite3"
    for _ in range(2):
        provider = SqliteCollectionProvider(path)
        try:
            assert await provider.applied_migrations() == [name for name, _ in MIGRATIONS]
        finally:
            await provider.aclose()

    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM migrations").fetchone() == (len(MIGRATIONS),)


async def test_all_collections_share_one_table_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "orc.sqlite3"
    provider = SqliteCollectionProvider(path)
    try:
        await (await provider.collection("conversations")).create(PK, "a", {"v": 1})
        await (await provider.collection("catalog")).create(PK, "a", {"v": 2})
    finally:
        await provider.aclose()

    with sqlite3.connect(path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        rows = db.execute("SELECT collection, pk, id, json_extract(body, '$.v') FROM items ORDER BY 1").fetchall()
        journal_mode = db.execute("PRAGMA journal_mode").fetchone()[0]
    assert tables == {"items", "migrations"}
    assert rows == [("catalog", PK, "a", 2), ("conversations", PK, "a", 1)]
    assert journal_mode == "wal"


async def test_a_provider_can_be_used_again_after_aclose(tmp_path: Path) -> None:
    provider = SqliteCollectionProvider(tmp_path / "orc.sqlite3")
    collection = await provider.collection("catalog")
    await collection.create(PK, "a", {})
    await provider.aclose()

    try:
        assert await collection.get(PK, "a") is not None
    finally:
        await provider.aclose()


async def test_two_providers_on_one_file_see_each_others_writes_and_race_safely(tmp_path: Path) -> None:
    path = tmp_path / "orc.sqlite3"
    one, two = SqliteCollectionProvider(path), SqliteCollectionProvider(path)
    try:
        left, right = await one.collection("items"), await two.collection("items")

        results = await asyncio.gather(
            *[(left if i % 2 else right).create(PK, "race", {"writer": i}) for i in range(10)],
            return_exceptions=True,
        )

        won = [r for r in results if isinstance(r, StoredItem)]
        assert len(won) == 1
        assert all(isinstance(r, ItemAlreadyExists) for r in results if not isinstance(r, StoredItem))
        assert await left.get(PK, "race") == await right.get(PK, "race") == won[0]
    finally:
        await one.aclose()
        await two.aclose()


async def test_reads_interleaved_with_writes_from_two_connections_are_never_refused_as_busy(tmp_path: Path) -> None:
    # Two providers on one file behave like two processes (orc serve beside the CLI, or several workers): a
    # read statement left open across an await would make the next write on its connection fail at once.
    first, second = SqliteCollectionProvider(tmp_path / "db.sqlite3"), SqliteCollectionProvider(tmp_path / "db.sqlite3")
    one, two = await first.collection("c"), await second.collection("c")
    await one.upsert("pk", "x-seed", {"seq": 0})

    async def churn(collection: DocumentCollection, tag: str) -> None:
        for i in range(60):
            await asyncio.gather(
                collection.query("pk", id_prefix="x", order_by="seq"),
                collection.upsert("pk", f"x-{tag}-{i}", {"seq": i}),
                collection.query("pk", id_prefix="x", order_by="seq", limit=3),
            )

    try:
        await asyncio.gather(churn(one, "a"), churn(two, "b"))
        assert len(await one.query("pk", id_prefix="x-")) == 121
    finally:
        await first.aclose()
        await second.aclose()


def _plans(path: Path, statements: list[tuple[str, tuple[Any, ...]]]) -> list[str]:
    with sqlite3.connect(path) as db:
        return [
            " ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", params)) for sql, params in statements
        ]


async def _migrated(path: Path) -> None:
    provider = SqliteCollectionProvider(path)
    try:
        await (await provider.collection("conversations")).create(PK, "c1:t1", {"seq": 1})
    finally:
        await provider.aclose()


async def test_a_prefix_query_searches_the_primary_key_between_both_ends_of_its_prefix(tmp_path: Path) -> None:
    # With only the lower end, SQLite walks every later id of the partition: each turn of a user with many
    # conversations would read all of their other conversations' items.
    await _migrated(tmp_path / "orc.sqlite3")
    statements = [
        select_statement("conversations", PK, {}, id_prefix="c1:", order_by=None, descending=True, limit=21),
        select_statement("catalog", PK, {}, id_prefix="file:c1:", order_by="created_at", descending=False, limit=None),
        select_statement(
            "conversations", PK, {"kind": "turn"}, id_prefix="t:c1:", order_by="seq", descending=False, limit=None
        ),
    ]

    for plan in _plans(tmp_path / "orc.sqlite3", statements):
        assert "USING PRIMARY KEY (collection=? AND pk=? AND id>? AND id<?)" in plan


async def test_a_query_on_an_indexed_field_without_a_prefix_reads_through_its_index(tmp_path: Path) -> None:
    # A user's conversation list (after every turn on the page) and an upload's digest lookup would otherwise
    # read every item of the user's partition.
    await _migrated(tmp_path / "orc.sqlite3")
    statements = [
        select_statement(
            "conversations",
            PK,
            {"kind": "conversation"},
            id_prefix=None,
            order_by="updated_at",
            descending=True,
            limit=100,
        ),
        select_statement("catalog", PK, {"digest_key": "k"}, id_prefix=None, order_by=None, descending=False, limit=1),
    ]

    kind, digest_key = _plans(tmp_path / "orc.sqlite3", statements)

    assert "USING INDEX items_kind (collection=? AND pk=? AND <expr>=?)" in kind
    assert "USING INDEX items_digest_key (collection=? AND pk=? AND <expr>=?)" in digest_key


async def test_prefix_queries_match_exactly_at_the_edges_of_the_code_points(tmp_path: Path) -> None:
    ids = ["a", "a\ud7ff", "a\ud7ffz", "a\ue000", "a\U0010ffff", "a\U0010ffffz", "b", "\U0010ffff", "\U0010ffffa"]
    provider = SqliteCollectionProvider(tmp_path / "orc.sqlite3")
    try:
        collection = await provider.collection("catalog")
        for item_id in ids:
            await collection.create(PK, item_id, {})

        for prefix in ("a", "a\ud7ff", "a\U0010ffff", "\U0010ffff", "b"):
            found = [item.id for item in await collection.query(PK, id_prefix=prefix)]
            assert found == sorted(i for i in ids if i.startswith(prefix)), prefix
    finally:
        await provider.aclose()


def test_the_end_of_a_prefix_is_the_next_code_point_that_utf8_can_hold() -> None:
    assert prefix_end("c1:") == "c1;"
    assert prefix_end("a\ud7ff") == "a\ue000"
    assert prefix_end("a\U0010ffff") == "b"
    assert prefix_end("\U0010ffff\U0010ffff") is None


async def test_a_file_made_before_the_indexes_gets_them_on_open_and_keeps_its_items(tmp_path: Path) -> None:
    path = tmp_path / "orc.sqlite3"
    (first_name, first_statements), *_ = MIGRATIONS
    with sqlite3.connect(path) as db:  # the file as the first release of the schema left it
        for statement in first_statements:
            db.execute(statement)
        db.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        db.execute("INSERT INTO migrations VALUES (?, '2026-01-01T00:00:00+00:00')", (first_name,))
        db.execute(
            "INSERT INTO items VALUES ('conversations', ?, 't:c1:header', '{\"kind\": \"conversation\"}', 'e1')", (PK,)
        )

    provider = SqliteCollectionProvider(path)
    try:
        assert await provider.applied_migrations() == [name for name, _ in MIGRATIONS]
        found = await (await provider.collection("conversations")).query(PK, where={"kind": "conversation"})
    finally:
        await provider.aclose()

    assert [item.id for item in found] == ["t:c1:header"]
    with sqlite3.connect(path) as db:
        indexes = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"items_kind", "items_digest_key"} <= indexes


async def test_a_migration_cancelled_while_it_commits_ends_cancelled_and_the_file_opens_afterwards(
    tmp_path: Path,
) -> None:
    # The cancellation arrives while the first COMMIT runs in aiosqlite's thread: the statement still completes
    # there, so the rollback that follows finds no transaction. Its error must not take the cancellation's place:
    # a background sweeper that logs errors would sleep on instead of stopping, and hold up the shutdown.
    path = tmp_path / "orc.sqlite3"
    loop = asyncio.get_running_loop()
    migrating: asyncio.Task[None] | None = None

    def on_statement(statement: str) -> None:
        if statement == "COMMIT" and migrating is not None:
            loop.call_soon_threadsafe(migrating.cancel)

    conn = await aiosqlite.connect(path, isolation_level=None)
    try:
        await conn.set_trace_callback(on_statement)
        migrating = asyncio.create_task(migrate(conn))
        with pytest.raises(asyncio.CancelledError):
            await migrating
    finally:
        await conn.close()

    provider = SqliteCollectionProvider(path)
    try:
        assert await provider.applied_migrations() == [name for name, _ in MIGRATIONS]
    finally:
        await provider.aclose()


async def test_a_first_call_cancelled_while_the_file_opens_finishes_the_open_and_closes_it_before_it_returns(
    tmp_path: Path,
) -> None:
    # A background sweep's first query opens the file, and shutdown may cancel it at any point of the open. What
    # the open queued runs on in aiosqlite's thread regardless; if the cancellation returned first, the loop could
    # close before that thread reports back, and the thread would fail in nobody's sight.
    path = tmp_path / "orc.sqlite3"
    provider = SqliteCollectionProvider(path)
    threads_before = connection_threads()
    first_call = asyncio.create_task(provider.applied_migrations())
    await asyncio.sleep(0)  # one step of the loop: the call has begun to open the file
    first_call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first_call

    with sqlite3.connect(path) as db:
        applied = [row[0] for row in db.execute("SELECT name FROM migrations ORDER BY name")]
    assert applied == [name for name, _ in MIGRATIONS]
    for thread in connection_threads() - threads_before:
        thread.join(timeout=30)  # a bound, not a wait: the connection was closed before the cancellation returned
        assert not thread.is_alive()
    try:
        assert await provider.applied_migrations() == applied
    finally:
        await provider.aclose()


def connection_threads() -> set[threading.Thread]:
    """aiosqlite's connection threads (one per open connection; Python names a thread after its target)."""
    return {thread for thread in threading.enumerate() if "_connection_worker_thread" in thread.name}
