"""The embedded collection backend: every collection in one SQLite file, one table, via aiosqlite.

Why it looks like this:

- One table ``items (collection, pk, id, body, etag)`` keyed by ``(collection, pk, id)`` mirrors the
  Cosmos layout, so the port has one meaning on both backends and a new collection needs no DDL.
- The connection runs in autocommit mode and every write is a single statement, so each write is atomic on
  its own: ``INSERT`` fails on the primary key for a duplicate create, ``UPDATE ... WHERE etag = ?`` makes
  conditional replaces exact. No transaction is ever left open across an ``await``.
- aiosqlite runs the connection in its own thread, so the event loop never blocks on disk I/O, and it
  serializes the statements of the one connection each provider opens.
- WAL mode lets readers in other processes (``orc`` CLI next to ``orc serve``) work while one writes.
- The schema evolves through an append-only list of migrations recorded in a ``migrations`` table.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from orc.errors import ETagMismatch, ItemAlreadyExists, ItemNotFound, StorageUnavailable
from orc.storage._common import (
    check_collection_name,
    check_item_id,
    check_partition_key,
    check_query,
    new_etag,
)
from orc.storage.ports import JsonScalar, StoredItem

__all__ = ["MIGRATIONS", "SqliteCollection", "SqliteCollectionProvider", "prefix_end", "select_statement"]

T = TypeVar("T")

MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "001_create_items",
        (
            """
            CREATE TABLE items (
                collection TEXT NOT NULL,
                pk TEXT NOT NULL,
                id TEXT NOT NULL,
                body TEXT NOT NULL CHECK (json_valid(body) AND json_type(body) = 'object'),
                etag TEXT NOT NULL,
                PRIMARY KEY (collection, pk, id)
            ) WITHOUT ROWID
            """,
        ),
    ),
    (
        "002_index_kind_and_digest_key",
        (
            # The fields queried without an id prefix (INDEXED_FIELDS): a user's conversation headers (listed
            # after every turn the page shows) and a file's digest key (looked up on upload). Without an index
            # each of those queries reads every item of the user's partition, every turn of every conversation.
            """CREATE INDEX items_kind ON items (collection, pk, json_extract(body, '$."kind"'))""",
            """CREATE INDEX items_digest_key ON items (collection, pk, json_extract(body, '$."digest_key"'))""",
        ),
    ),
)
"""Append-only ``(name, statements)``; names sort in order. Never edit or reorder a shipped entry: add one."""

INDEXED_FIELDS = {"kind": "items_kind", "digest_key": "items_digest_key"}
"""The body fields with an index of their own (MIGRATIONS), by index name: a query on one and no id prefix uses it."""

_BUSY_TIMEOUT_SECONDS = 5.0

# Cosmos DB's cross-type order (see orc.storage._common.json_rank), computed from SQLite's json_type().
_RANK_SQL = (
    "CASE json_type(body, {path}) WHEN 'null' THEN 1 WHEN 'true' THEN 2 WHEN 'false' THEN 2 "
    "WHEN 'integer' THEN 3 WHEN 'real' THEN 3 WHEN 'text' THEN 4 ELSE 5 END"
)


def _serialized(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``body`` as the stored JSON text and as the JSON-only copy the item holds (what
    :func:`orc.storage._common.to_json_object` makes), from one serialization."""
    if not isinstance(body, Mapping):
        raise TypeError("item bodies are JSON objects (mappings)")
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    stored: dict[str, Any] = json.loads(text)
    return text, stored


def _json_path(field: str) -> str:
    # Field names are validated identifiers; quoting keeps the path literal anyway.
    return f'$."{field}"'


async def _guard(operation: Awaitable[T]) -> T:
    """Run one database call, turning "busy", "locked" and I/O failures into :class:`StorageUnavailable`."""
    try:
        return await operation
    except sqlite3.OperationalError as exc:
        raise StorageUnavailable("the embedded database is busy or unavailable; retry later") from exc


class SqliteCollectionProvider:
    """A :class:`~orc.storage.ports.CollectionProvider` backed by one SQLite file.

    The file (and its folder) is created and migrated on first use; :meth:`aclose` closes the connection,
    and a later call opens it again.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._conn: aiosqlite.Connection | None = None
        self._open_lock = asyncio.Lock()
        self._collections: dict[str, SqliteCollection] = {}

    async def collection(self, name: str) -> SqliteCollection:
        check_collection_name(name)
        found = self._collections.get(name)
        if found is None:
            found = self._collections[name] = SqliteCollection(name, self._connection)
        return found

    async def aclose(self) -> None:
        async with self._open_lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                await conn.close()

    async def applied_migrations(self) -> list[str]:
        """Names of the migrations applied to the file, in order (for diagnostics and tests)."""
        conn = await self._connection()
        async with conn.execute("SELECT name FROM migrations ORDER BY name") as cursor:
            rows = await cursor.fetchall()
        return [str(row[0]) for row in rows]

    async def _connection(self) -> aiosqlite.Connection:
        conn = self._conn
        if conn is not None:
            return conn
        async with self._open_lock:
            if self._conn is None:
                self._conn = await _guard(self._open_whole())
            return self._conn

    async def _open_whole(self) -> aiosqlite.Connection:
        """:meth:`_open`, finished even when the caller is cancelled; a cancelled caller's connection is closed.

        Opening is a series of calls in aiosqlite's thread that run to their end whatever happens to the task
        that queued them. Cancelled halfway (a background sweep stopped at shutdown), aiosqlite would stop the
        thread without waiting, and the thread would then report to an event loop that may have closed: an
        error in a thread nobody joins. Waiting out the open and closing what it made ends the thread while the
        loop still runs.
        """
        opening = asyncio.ensure_future(self._open())
        try:
            return await asyncio.shield(opening)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):  # its failure was the cancelled caller's, and it is gone
                await (await opening).close()
            raise

    async def _open(self) -> aiosqlite.Connection:
        await asyncio.to_thread(self.path.parent.mkdir, parents=True, exist_ok=True)
        # isolation_level=None: autocommit, so a single-statement write is its own transaction.
        conn = await aiosqlite.connect(self.path, timeout=_BUSY_TIMEOUT_SECONDS, isolation_level=None)
        try:
            await _enable_wal(conn)
            # NORMAL is durable against application crashes in WAL mode and much faster than FULL.
            await conn.execute("PRAGMA synchronous=NORMAL")
            await migrate(conn)
        except BaseException:
            with contextlib.suppress(sqlite3.Error):  # the failure that brought us here is the one to report
                await conn.close()
            raise
        return conn


async def _enable_wal(conn: aiosqlite.Connection) -> None:
    # Switching a new file to WAL fails with "database is locked" at once, without waiting on the busy
    # timeout, when another connection is switching it at the same moment: retry for a bounded time.
    deadline = asyncio.get_running_loop().time() + _BUSY_TIMEOUT_SECONDS
    while True:
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.01)


async def migrate(conn: aiosqlite.Connection) -> None:
    """Apply the :data:`MIGRATIONS` the file lacks, each in its own transaction with its record."""
    await conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for name, statements in MIGRATIONS:
        # BEGIN IMMEDIATE takes the write lock first, so two processes opening a new file do not both migrate.
        # The statements run one by one because executescript() would commit this transaction early.
        await conn.execute("BEGIN IMMEDIATE")
        try:
            async with conn.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)) as cursor:
                done = await cursor.fetchone() is not None
            if not done:
                for statement in statements:
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                    (name, datetime.now(UTC).isoformat()),
                )
            await conn.execute("COMMIT")
        except BaseException:
            # A cancelled statement still runs in aiosqlite's thread: after a cancelled COMMIT there is no
            # transaction left, and the rollback's own error must not take the place of the cancellation.
            with contextlib.suppress(sqlite3.Error):
                await conn.execute("ROLLBACK")
            raise


def select_statement(
    collection: str,
    partition_key: str,
    conditions: Mapping[str, JsonScalar],
    *,
    id_prefix: str | None,
    order_by: str | None,
    descending: bool,
    limit: int | None,
) -> tuple[str, tuple[Any, ...]]:
    """The ``SELECT`` and its parameters for :meth:`SqliteCollection.query` (arguments already checked)."""
    clauses = ["collection = ?", "pk = ?"]
    params: list[Any] = [collection, partition_key]
    index: str | None = None
    for field, value in conditions.items():
        path = _json_path(field)
        # Compare JSON types too, so true never equals 1 and a missing field never equals null.
        if value is None:
            clauses.append("json_type(body, ?) = 'null'")
            params.append(path)
        elif isinstance(value, bool):
            clauses.append("json_type(body, ?) = ?")
            params += [path, "true" if value else "false"]
        elif isinstance(value, int | float):
            clauses.append("json_type(body, ?) IN ('integer', 'real') AND json_extract(body, ?) = ?")
            params += [path, path, value]
        elif index is None and not id_prefix and field in INDEXED_FIELDS:
            # Read through the field's index. With an id prefix the primary key's range of ids is the narrower
            # read. The path is written out as the index spells it, or SQLite would not match the two.
            index = INDEXED_FIELDS[field]
            clauses.append(f"json_type(body, '{path}') = 'text' AND json_extract(body, '{path}') = ?")
            params.append(value)
        else:
            clauses.append("json_type(body, ?) = 'text' AND json_extract(body, ?) = ?")
            params += [path, path, value]
    if id_prefix:
        # Both ends of the range, so the primary key reads only the prefixed ids: with the lower end alone,
        # SQLite walks every later id of the partition (every other conversation of a user) on each query.
        # substr keeps the match exact whatever the range holds; not LIKE, which is case-insensitive and
        # treats '%' and '_' as wildcards.
        clauses.append("id >= ?")
        params.append(id_prefix)
        end = prefix_end(id_prefix)
        if end is not None:
            clauses.append("id < ?")
            params.append(end)
        clauses.append("substr(id, 1, ?) = ?")
        params += [len(id_prefix), id_prefix]
    direction = "DESC" if descending else "ASC"
    if order_by is None:
        order = f"id {direction}"
    else:
        path = _json_path(order_by)
        clauses.append("json_type(body, ?) IS NOT NULL")
        params.append(path)
        order = f"{_RANK_SQL.format(path='?')} {direction}, json_extract(body, ?) {direction}, id {direction}"
        params += [path, path]
    # Named, because SQLite's planner prefers the primary key's (collection, pk) to a secondary index of a
    # WITHOUT ROWID table whatever the index's third column would spare it.
    source = f"items INDEXED BY {index}" if index else "items"
    sql = f"SELECT id, body, etag FROM {source} WHERE {' AND '.join(clauses)} ORDER BY {order}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return sql, tuple(params)


def prefix_end(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``: its last character moved one code point
    up, dropping trailing U+10FFFF characters first; ``None`` when nothing is above (``prefix`` is all U+10FFFF).

    SQLite compares TEXT byte by byte, and UTF-8 bytes order like code points, so ``prefix <= id < end`` holds
    exactly for the ids that start with ``prefix``.
    """
    while prefix:
        following = ord(prefix[-1]) + 1
        if following <= 0x10FFFF:
            if 0xD800 <= following <= 0xDFFF:
                following = 0xE000  # surrogates have no UTF-8 form; U+E000 is the next code point that has one
            return prefix[:-1] + chr(following)
        prefix = prefix[:-1]
    return None


class SqliteCollection:
    """One named collection inside the provider's table; see :class:`~orc.storage.ports.DocumentCollection`."""

    def __init__(self, name: str, connection: Callable[[], Awaitable[aiosqlite.Connection]]) -> None:
        self.name = name
        self._connection = connection

    async def _execute(self, sql: str, params: tuple[Any, ...]) -> int:
        """Run one write; the number of rows it changed."""
        conn = await self._connection()

        async def run() -> int:
            # RETURNING counts the changed rows in the same trip to the connection's thread that runs, steps and
            # closes the statement; a cursor's rowcount needs a second trip to close it.
            return len(list(await conn.execute_fetchall(f"{sql} RETURNING 1", params)))

        return await _guard(run())

    async def _fetch(self, sql: str, params: tuple[Any, ...]) -> list[sqlite3.Row | tuple[Any, ...]]:
        conn = await self._connection()

        async def run() -> list[Any]:
            # One call that executes, reads every row and closes the statement: a cursor left open across an
            # await would hold a read snapshot that a concurrent write on this connection then has to upgrade,
            # and SQLite refuses that at once ("busy", no busy-timeout wait) once another process has written.
            return list(await conn.execute_fetchall(sql, params))

        return await _guard(run())

    async def _etag_of(self, partition_key: str, item_id: str) -> str | None:
        rows = await self._fetch(
            "SELECT etag FROM items WHERE collection = ? AND pk = ? AND id = ?",
            (self.name, partition_key, item_id),
        )
        return str(rows[0][0]) if rows else None

    async def get(self, partition_key: str, item_id: str) -> StoredItem | None:
        check_partition_key(partition_key)
        check_item_id(item_id)
        rows = await self._fetch(
            "SELECT body, etag FROM items WHERE collection = ? AND pk = ? AND id = ?",
            (self.name, partition_key, item_id),
        )
        if not rows:
            return None
        body, etag = rows[0]
        return StoredItem(item_id, partition_key, json.loads(body), str(etag))

    async def create(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        check_partition_key(partition_key)
        check_item_id(item_id)
        text, stored = _serialized(body)
        etag = new_etag()
        try:
            await self._execute(
                "INSERT INTO items (collection, pk, id, body, etag) VALUES (?, ?, ?, ?, ?)",
                (self.name, partition_key, item_id, text, etag),
            )
        except sqlite3.IntegrityError:
            raise ItemAlreadyExists(f"item {item_id!r} already exists") from None
        return StoredItem(item_id, partition_key, stored, etag)

    async def replace(
        self, partition_key: str, item_id: str, body: Mapping[str, Any], *, if_match: str | None = None
    ) -> StoredItem:
        check_partition_key(partition_key)
        check_item_id(item_id)
        text, stored = _serialized(body)
        etag = new_etag()
        sql = "UPDATE items SET body = ?, etag = ? WHERE collection = ? AND pk = ? AND id = ?"
        params: tuple[Any, ...] = (text, etag, self.name, partition_key, item_id)
        if if_match is not None:
            sql += " AND etag = ?"
            params += (if_match,)
        if await self._execute(sql, params) == 0:
            # Nothing matched: tell "gone" from "changed" (the answer is true as of this second read).
            if await self._etag_of(partition_key, item_id) is None:
                raise ItemNotFound(f"item {item_id!r} does not exist")
            raise ETagMismatch(f"item {item_id!r} has changed")
        return StoredItem(item_id, partition_key, stored, etag)

    async def upsert(self, partition_key: str, item_id: str, body: Mapping[str, Any]) -> StoredItem:
        check_partition_key(partition_key)
        check_item_id(item_id)
        text, stored = _serialized(body)
        etag = new_etag()
        await self._execute(
            "INSERT INTO items (collection, pk, id, body, etag) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (collection, pk, id) DO UPDATE SET body = excluded.body, etag = excluded.etag",
            (self.name, partition_key, item_id, text, etag),
        )
        return StoredItem(item_id, partition_key, stored, etag)

    async def delete(self, partition_key: str, item_id: str, *, if_match: str | None = None) -> bool:
        check_partition_key(partition_key)
        check_item_id(item_id)
        sql = "DELETE FROM items WHERE collection = ? AND pk = ? AND id = ?"
        params: tuple[Any, ...] = (self.name, partition_key, item_id)
        if if_match is not None:
            sql += " AND etag = ?"
            params += (if_match,)
        if await self._execute(sql, params) == 1:
            return True
        if if_match is not None and await self._etag_of(partition_key, item_id) is not None:
            raise ETagMismatch(f"item {item_id!r} has changed")
        return False

    async def query(
        self,
        partition_key: str,
        *,
        where: Mapping[str, JsonScalar] | None = None,
        id_prefix: str | None = None,
        order_by: str | None = None,
        descending: bool = False,
        limit: int | None = None,
    ) -> list[StoredItem]:
        """Items of one partition; same semantics as :meth:`orc.storage.memory.MemoryCollection.query`."""
        check_partition_key(partition_key)
        conditions = check_query(where, order_by, limit, id_prefix)
        if limit == 0:
            return []
        sql, params = select_statement(
            self.name,
            partition_key,
            conditions,
            id_prefix=id_prefix,
            order_by=order_by,
            descending=descending,
            limit=limit,
        )
        rows = await self._fetch(sql, params)
        return [StoredItem(str(i), partition_key, json.loads(b), str(e)) for i, b, e in rows]
