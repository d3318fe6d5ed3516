"""The embedded search engine: one index per organization on the local disk, shared by every process on the
machine and updated in place.

Why it looks like this (measurements in ``docs/search.md`` and ``bench/README.md``):

- **Lexical: tantivy** (a Rust BM25 engine with Lucene's index layout, from PyPI). Over a million spans it
  answers a top-30 disjunction in a few milliseconds, because it skips blocks of postings that cannot reach the
  top (block-max WAND) where SQLite's FTS5 scores every matching row. Spans are indexed as orc's own tokens
  (:func:`orc.text.tokenize`, joined by spaces and split again by tantivy's whitespace tokenizer), so ranking sees
  the same terms whatever engine holds them. Each organization has its own index directory: one organization's
  queries never read another's postings, and its BM25 statistics are its own.
- **Everything else: one SQLite file** (stdlib ``sqlite3``, WAL): which version of which document is indexed,
  token totals for the corpus statistics, and the span vectors. SQLite's locking makes it safe to share between
  processes as it is.
- **Shared, never rebuilt per process.** Every process opens the same directories. A write takes an exclusive
  file lock on the organization's index (``flock``), so ``orc serve --workers 2`` and ``orc worker`` take turns;
  writes queued meanwhile in one process go in the same commit (a commit costs a sync to disk, not per span). A
  search first looks at the index's ``meta.json`` (one ``stat``) and reloads when another process committed, so
  the next search after a replace sees it in every process.
- **Vectors** are one float32 matrix per document in the SQLite file, compared with the query by one matrix
  product per document, with a per-process cache bounded in bytes: exact, and cheap for the documents of a
  session or a team, linear in the spans searched for an organization of thousands of documents.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import sqlite3
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orc.search.fusion import reciprocal_rank_fusion
from orc.search.port import (
    IndexedDocument,
    IndexedEntry,
    IndexedSpan,
    SearchFilter,
    SearchRequest,
    SpanHit,
    TermStatistics,
)

if TYPE_CHECKING:  # numpy loads only where vectors are searched or stored
    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

LAYOUT = "1"
"""The on-disk layout; part of the folder name, so a change of it starts a new index (rebuilt from the stored
text by the retriever as documents are searched) instead of misreading an old one."""
WRITER_HEAP_BYTES = 15_000_000
"""tantivy's indexing buffer: a batch bigger than this is flushed in more than one segment."""
VECTOR_CACHE_BYTES = 128 << 20
"""Span vectors a process keeps between searches."""
_MIGRATIONS = (
    """
    CREATE TABLE documents (
        organization TEXT NOT NULL,
        document_id TEXT NOT NULL,
        version TEXT NOT NULL,
        owner TEXT NOT NULL,
        spans INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        vector_model TEXT,
        PRIMARY KEY (organization, document_id)
    ) WITHOUT ROWID;
    CREATE INDEX documents_by_owner ON documents (organization, owner);
    CREATE TABLE vectors (
        organization TEXT NOT NULL,
        document_id TEXT NOT NULL,
        version TEXT NOT NULL,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (organization, document_id)
    ) WITHOUT ROWID;
    """,
)


def _schema() -> Any:
    import tantivy

    builder = tantivy.SchemaBuilder()
    # Raw: ids and owners are matched whole (deletes and filters), never tokenized.
    builder.add_text_field("document", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("owner", tokenizer_name="raw", index_option="basic")
    # orc's tokens, joined by spaces: term frequencies for BM25, no positions (no phrase queries are made).
    builder.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
    builder.add_text_field("title", tokenizer_name="whitespace", index_option="freq")
    builder.add_unsigned_field("ordinal", stored=True, indexed=True, fast=True)
    builder.add_bytes_field("payload", stored=True)
    return builder.build()


@dataclass(frozen=True, slots=True)
class _Upsert:
    document: IndexedDocument


@dataclass(frozen=True, slots=True)
class _Delete:
    document_id: str


_Operation = _Upsert | _Delete


@dataclass(frozen=True, slots=True)
class _Row:
    entry: IndexedEntry
    owner: str
    tokens: int


@dataclass(frozen=True, slots=True)
class _Directory:
    """One organization's rows of the ``documents`` table, as this process last read them."""

    rows: dict[str, _Row]
    spans: int
    tokens: int
    owners: frozenset[str]


class _Lexical:
    """One organization's tantivy index, reloaded when another process (or this one) committed."""

    def __init__(self, path: Path, schema: Any) -> None:
        import tantivy

        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.schema = schema
        self.index = tantivy.Index(schema, path=str(path), reuse=True)
        self._seen: tuple[int, int, int] | None = None
        self._lock = threading.Lock()
        self._searcher: Any = None

    def searcher(self) -> Any:
        """A searcher over the last commit of any process (one ``stat`` when nothing changed)."""
        try:
            info = os.stat(self.path / "meta.json")
            seen = (info.st_ino, info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            seen = None
        with self._lock:
            if self._searcher is None or seen != self._seen:
                self.index.reload()
                self._searcher = self.index.searcher()
                self._seen = seen
            return self._searcher

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the organization's write lock (across processes; released by the OS if the process dies)."""
        with open(self.path / ".orc-write.lock", "a+b") as handle:
            _lock(handle.fileno())
            try:
                yield
            finally:
                _unlock(handle.fileno())


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt
    import time

    def _lock(descriptor: int) -> None:
        while True:
            try:
                msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
                return
            except OSError:
                time.sleep(0.01)  # msvcrt has no blocking lock without a 10-second give-up

    def _unlock(descriptor: int) -> None:
        msvcrt.locking(descriptor, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(descriptor: int) -> None:
        fcntl.flock(descriptor, fcntl.LOCK_EX)

    def _unlock(descriptor: int) -> None:
        fcntl.flock(descriptor, fcntl.LOCK_UN)


class EmbeddedSearchEngine:
    """:class:`~orc.search.port.SearchEngine` on the local disk under ``root``; see the module docstring."""

    def __init__(self, root: Path, *, vector_cache_bytes: int = VECTOR_CACHE_BYTES) -> None:
        self._root = root / f"v{LAYOUT}"
        self._schema: Any = None
        self._indexes: dict[str, _Lexical] = {}
        self._indexes_lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._db_lock = threading.Lock()
        self._pending: dict[str, list[tuple[_Operation, asyncio.Future[None]]]] = {}
        self._flushing: dict[str, asyncio.Task[None]] = {}
        self._vectors: OrderedDict[tuple[str, str, str, str], npt.NDArray[np.float32]] = OrderedDict()
        self._vector_bytes = 0
        self._vector_cache_bytes = vector_cache_bytes
        self._vectors_lock = threading.Lock()
        # Each organization's documents table, re-read only after a commit (SQLite's data_version says when
        # another process committed; this process's own commits drop the organization's copy).
        self._directories: dict[str, _Directory] = {}
        self._data_version: int | None = None
        self._closed = False

    # -- plumbing ----------------------------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            self._root.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self._root / "documents.sqlite3", check_same_thread=False, timeout=30.0)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            with db:
                (version,) = db.execute("PRAGMA user_version").fetchone()
                for number, script in enumerate(_MIGRATIONS[version:], start=version + 1):
                    db.executescript(f"BEGIN IMMEDIATE; {script}; PRAGMA user_version={number}; COMMIT;")
            self._db = db
        return self._db

    @contextlib.contextmanager
    def _sql(self) -> Iterator[sqlite3.Connection]:
        with self._db_lock:
            yield self._connection()

    def _lexical(self, organization: str) -> _Lexical:
        with self._indexes_lock:
            found = self._indexes.get(organization)
            if found is None:
                if self._schema is None:
                    self._schema = _schema()
                name = hashlib.sha256(organization.encode()).hexdigest()[:32]
                found = self._indexes[organization] = _Lexical(self._root / "lexical" / name, self._schema)
            return found

    # -- writes ------------------------------------------------------------------------------------------------

    async def upsert(self, document: IndexedDocument) -> None:
        """Replace ``document``'s entry; returns once it is committed."""
        if document.vectors is not None and len(document.vectors) != len(document.spans):
            raise ValueError("vectors must hold one row per span")
        await self._submit(document.organization, _Upsert(document))

    async def delete(self, organization: str, document_id: str) -> None:
        """Remove ``document_id``'s entry; returns once it is committed."""
        await self._submit(organization, _Delete(document_id))

    async def _submit(self, organization: str, operation: _Operation) -> None:
        if self._closed:
            raise RuntimeError("the search engine is closed")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(organization, []).append((operation, future))
        if organization not in self._flushing:
            self._flushing[organization] = asyncio.create_task(self._flush(organization), name="search-commit")
        # The commit goes on if this caller is cancelled: a half-applied batch is never left behind.
        await asyncio.shield(future)

    async def _flush(self, organization: str) -> None:
        try:
            while batch := self._pending.pop(organization, None):
                try:
                    await asyncio.to_thread(self._apply, organization, [operation for operation, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                else:
                    for _, future in batch:
                        if not future.done():
                            future.set_result(None)
        finally:
            self._flushing.pop(organization, None)

    def _apply(self, organization: str, operations: Sequence[_Operation]) -> None:
        """One commit for a batch, in order: the lexical index first, then the SQLite rows that say it is there
        (a crash between the two leaves a row naming an older version, which the retriever re-indexes)."""
        import tantivy

        lexical = self._lexical(organization)
        with lexical.exclusive():
            writer = lexical.index.writer(WRITER_HEAP_BYTES, 1)
            try:
                for operation in operations:
                    document_id = (
                        operation.document.document_id if isinstance(operation, _Upsert) else operation.document_id
                    )
                    writer.delete_documents_by_term("document", document_id)
                    if isinstance(operation, _Upsert):
                        owner = operation.document.scope.owner
                        for span in operation.document.spans:
                            writer.add_document(_tantivy_document(tantivy, operation.document, owner, span))
                writer.commit()
            except BaseException:
                writer.rollback()
                raise
            finally:
                # Merges the commit started finish before the lock is let go, so segments do not pile up.
                writer.wait_merging_threads()
        with self._sql() as db, db:
            self._directories.pop(organization, None)
            for operation in operations:
                if isinstance(operation, _Delete):
                    db.execute(
                        "DELETE FROM documents WHERE organization = ? AND document_id = ?",
                        (organization, operation.document_id),
                    )
                    db.execute(
                        "DELETE FROM vectors WHERE organization = ? AND document_id = ?",
                        (organization, operation.document_id),
                    )
                    continue
                document = operation.document
                has_vectors = document.vectors is not None and len(document.spans) > 0
                db.execute(
                    "INSERT OR REPLACE INTO documents VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        organization,
                        document.document_id,
                        document.version,
                        document.scope.owner,
                        len(document.spans),
                        sum(len(span.terms) for span in document.spans),
                        document.vector_model if has_vectors else None,
                    ),
                )
                if has_vectors and document.vector_model is not None and document.vectors is not None:
                    import numpy as np

                    matrix = np.ascontiguousarray(np.asarray(document.vectors, dtype="<f4"))
                    db.execute(
                        "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            organization,
                            document.document_id,
                            document.version,
                            document.vector_model,
                            matrix.shape[1],
                            matrix.tobytes(),
                        ),
                    )
                else:
                    db.execute(
                        "DELETE FROM vectors WHERE organization = ? AND document_id = ?",
                        (organization, document.document_id),
                    )

    # -- reads -------------------------------------------------------------------------------------------------

    def _directory(self, organization: str) -> _Directory:
        """The organization's documents table (a cheap ``PRAGMA`` when nothing was committed since last read)."""
        with self._sql() as db:
            (version,) = db.execute("PRAGMA data_version").fetchone()
            if version != self._data_version:
                self._directories.clear()
                self._data_version = version
            found = self._directories.get(organization)
            if found is None:
                rows = {
                    document_id: _Row(IndexedEntry(version_, spans, model), owner, tokens)
                    for document_id, version_, spans, tokens, model, owner in db.execute(
                        "SELECT document_id, version, spans, tokens, vector_model, owner FROM documents "
                        "WHERE organization = ?",
                        (organization,),
                    )
                }
                found = _Directory(
                    rows=rows,
                    spans=sum(row.entry.spans for row in rows.values()),
                    tokens=sum(row.tokens for row in rows.values()),
                    owners=frozenset(row.owner for row in rows.values()),
                )
                self._directories[organization] = found
            return found

    async def search(self, request: SearchRequest) -> list[SpanHit]:
        """BM25 (tantivy), exact cosine similarity, or both fused by reciprocal rank fusion."""
        if request.limit < 1 or _empty(request.filter):
            return []
        lexical: list[SpanHit] = []
        vector: list[SpanHit] = []
        if request.mode != "vector":
            lexical = await asyncio.to_thread(self._lexical_search, request)
        if request.mode != "lexical":
            vector = await asyncio.to_thread(self._vector_search, request)
        if request.mode == "lexical":
            return lexical
        if request.mode == "vector":
            return vector
        by_key = {(hit.document_id, hit.span.ordinal): hit for hit in (*vector, *lexical)}
        fused = reciprocal_rank_fusion(
            [
                [(hit.document_id, hit.span.ordinal) for hit in lexical],
                [(hit.document_id, hit.span.ordinal) for hit in vector],
            ],
            request.limit,
        )
        return [SpanHit(by_key[key].document_id, by_key[key].version, by_key[key].span, value) for key, value in fused]

    def _filter_query(self, tantivy: Any, schema: Any, where: SearchFilter) -> list[Any]:
        """The filter as clauses beside the terms. A filter that keeps every owner (or document) the organization
        has is no clause at all, and one that keeps most of them excludes the rest: a query whose terms stand alone
        (or with exclusions) lets tantivy skip blocks of postings that cannot reach the top (block-max WAND),
        while a required filter makes it score every span that matches a term. The retriever drops hits outside
        its targets anyway, so a documents table a moment behind the index never widens what it returns."""
        clauses = []
        directory = self._directory(where.organization)
        for field, wanted, present in (
            ("owner", where.owners, directory.owners),
            ("document", where.documents, directory.rows.keys()),
        ):
            if wanted is None:
                continue
            excluded = present - wanted
            kept = present & wanted
            if not excluded and kept == wanted:
                continue  # everything the organization has: no clause
            if excluded and len(excluded) <= len(kept) and kept == wanted:
                clauses.append((tantivy.Occur.MustNot, tantivy.Query.term_set_query(schema, field, sorted(excluded))))
            else:
                chosen = tantivy.Query.term_set_query(schema, field, sorted(wanted))
                clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(chosen, 0.0)))
        return clauses

    def _lexical_search(self, request: SearchRequest) -> list[SpanHit]:
        import tantivy

        terms = {term: weight for term, weight in request.terms.items() if weight > 0 and term}
        if not terms:
            return []
        lexical = self._lexical(request.filter.organization)
        schema = lexical.schema
        should = []
        for term, weight in terms.items():
            should.append(
                (tantivy.Occur.Should, tantivy.Query.boost_query(_term(tantivy, schema, "body", term), weight))
            )
            if request.title_weight > 0:
                title = _term(tantivy, schema, "title", term)
                should.append((tantivy.Occur.Should, tantivy.Query.boost_query(title, weight * request.title_weight)))
        matching = tantivy.Query.boolean_query(should)
        filters = self._filter_query(tantivy, schema, request.filter)
        if any(occur == tantivy.Occur.Must for occur, _ in filters):
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, matching), *filters])
        else:  # the terms alone, or beside exclusions: one disjunction tantivy can prune
            query = tantivy.Query.boolean_query([*should, *filters]) if filters else matching
        searcher = lexical.searcher()
        found = searcher.search(query, request.limit, count=False).hits
        hits = [_hit(searcher.doc(address), float(score)) for score, address in found]
        # tantivy breaks ties by its own document order; the port's order is (document id, ordinal).
        hits.sort(key=lambda hit: (-hit.score, hit.document_id, hit.span.ordinal))
        return hits

    def _vector_search(self, request: SearchRequest) -> list[SpanHit]:
        if request.vector is None or request.vector_model is None:
            return []
        import numpy as np

        query = np.asarray(request.vector, dtype=np.float32).reshape(-1)
        where = request.filter
        rows = [
            (document_id, row.entry.version)
            for document_id, row in self._directory(where.organization).rows.items()
            if row.entry.vector_model == request.vector_model
            and (where.owners is None or row.owner in where.owners)
            and (where.documents is None or document_id in where.documents)
        ]
        found: list[tuple[float, str, int, str]] = []
        for document_id, version in sorted(rows):
            matrix = self._matrix(where.organization, document_id, version, request.vector_model)
            if matrix is None or matrix.shape[1] != len(query) or not len(matrix):
                continue
            scores = matrix @ query
            limit = min(request.limit, len(scores))
            top = np.argpartition(-scores, limit - 1)[:limit] if len(scores) > limit else np.arange(len(scores))
            found.extend((float(scores[row]), document_id, int(row), version) for row in top)
        found.sort(key=lambda item: (-item[0], item[1], item[2]))
        best = found[: request.limit]
        hits = []
        for value, document_id, ordinal, version in best:
            spans = self._spans(where.organization, document_id, [ordinal])
            if spans and spans[0].version == version:
                hits.append(SpanHit(document_id, version, spans[0].span, round(value, 6)))
        return hits

    def _matrix(self, organization: str, document_id: str, version: str, model: str) -> npt.NDArray[np.float32] | None:
        key = (organization, document_id, version, model)
        with self._vectors_lock:
            cached = self._vectors.get(key)
            if cached is not None:
                self._vectors.move_to_end(key)
                return cached
        with self._sql() as db:
            row = db.execute(
                "SELECT dims, data FROM vectors "
                "WHERE organization = ? AND document_id = ? AND version = ? AND model = ?",
                (organization, document_id, version, model),
            ).fetchone()
        if row is None:
            return None
        import numpy as np

        dims, data = row
        matrix = np.frombuffer(data, dtype="<f4").reshape(-1, dims).astype(np.float32)
        with self._vectors_lock:
            self._vectors[key] = matrix
            self._vector_bytes += matrix.nbytes
            while self._vector_bytes > self._vector_cache_bytes and len(self._vectors) > 1:
                _, evicted = self._vectors.popitem(last=False)
                self._vector_bytes -= evicted.nbytes
        return matrix

    async def spans(self, organization: str, document_id: str, ordinals: Sequence[int]) -> list[SpanHit]:
        """The spans of ``document_id`` at ``ordinals``, read from the index's stored fields."""
        wanted = sorted({ordinal for ordinal in ordinals if ordinal >= 0})
        if not wanted:
            return []
        return await asyncio.to_thread(self._spans, organization, document_id, wanted)

    def _spans(self, organization: str, document_id: str, ordinals: Sequence[int]) -> list[SpanHit]:
        import tantivy

        lexical = self._lexical(organization)
        schema = lexical.schema
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, tantivy.Query.term_query(schema, "document", document_id)),
                (tantivy.Occur.Must, tantivy.Query.term_set_query(schema, "ordinal", list(ordinals))),
            ]
        )
        searcher = lexical.searcher()
        found = searcher.search(query, len(ordinals), count=False).hits
        hits = [_hit(searcher.doc(address), 0.0) for _, address in found]
        hits.sort(key=lambda hit: hit.span.ordinal)
        return hits

    async def entries(self, organization: str, document_ids: Sequence[str]) -> dict[str, IndexedEntry]:
        """The indexed version of each of ``document_ids`` (from the organization's documents table, read again
        only after a commit)."""
        return await asyncio.to_thread(self._entries, organization, document_ids)

    def _entries(self, organization: str, document_ids: Sequence[str]) -> dict[str, IndexedEntry]:
        rows = self._directory(organization).rows
        return {document_id: row.entry for document_id in document_ids if (row := rows.get(document_id)) is not None}

    async def statistics(self, organization: str, terms: Sequence[str]) -> TermStatistics:
        """Span count and token total from the documents table, span frequencies from the index's term
        dictionary."""
        return await asyncio.to_thread(self._statistics, organization, terms)

    def _statistics(self, organization: str, terms: Sequence[str]) -> TermStatistics:
        directory = self._directory(organization)
        frequencies: dict[str, int] = {}
        if terms and directory.spans:
            searcher = self._lexical(organization).searcher()
            for term in dict.fromkeys(terms):
                count = int(searcher.doc_freq("body", term)) if term else 0
                if count:
                    frequencies[term] = count
        average = directory.tokens / directory.spans if directory.spans else 0.0
        return TermStatistics(spans=directory.spans, average_length=average, frequencies=frequencies)

    async def vocabulary(self, organization: str, prefix: str, limit: int) -> list[str]:
        """Terms of the span text starting with ``prefix`` (tantivy's term dictionary)."""
        if limit < 1:
            return []

        def walk() -> list[str]:
            searcher = self._lexical(organization).searcher()
            found = searcher.terms_with_prefix("body", prefix)
            return sorted(term for term, count in found if count > 0)[:limit]

        return await asyncio.to_thread(walk)

    async def aclose(self) -> None:
        """Wait for queued writes, then close the SQLite connection (the indexes stay on disk)."""
        self._closed = True
        while self._flushing:
            await asyncio.gather(*list(self._flushing.values()), return_exceptions=True)
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._db_lock:
            if self._db is not None:
                self._db.close()
                self._db = None
        with self._indexes_lock:
            self._indexes.clear()


def _empty(where: SearchFilter) -> bool:
    return (where.owners is not None and not where.owners) or (where.documents is not None and not where.documents)


def _term(tantivy: Any, schema: Any, field: str, term: str) -> Any:
    return tantivy.Query.term_query(schema, field, term, index_option="freq")


def _tantivy_document(tantivy: Any, document: IndexedDocument, owner: str, span: IndexedSpan) -> Any:
    payload = {
        "v": document.version,
        "i": span.span_id,
        "p": span.page,
        "s": span.start,
        "e": span.end,
        "c": span.section,
        "t": span.text,
        "z": [" ".join(sentence) for sentence in span.sentences],
        "h": " ".join(span.title_terms),
    }
    stored = tantivy.Document()
    stored.add_text("document", document.document_id)
    stored.add_text("owner", owner)
    stored.add_text("body", " ".join(span.terms))
    stored.add_text("title", " ".join(span.title_terms))
    stored.add_unsigned("ordinal", span.ordinal)
    stored.add_bytes("payload", json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())
    return stored


def _hit(stored: Any, score: float) -> SpanHit:
    payload = json.loads(bytes(stored.get_first("payload")))
    span = IndexedSpan(
        ordinal=int(stored.get_first("ordinal")),
        span_id=payload["i"],
        page=payload["p"],
        start=payload["s"],
        end=payload["e"],
        text=payload["t"],
        section=payload["c"],
        terms=(),
        title_terms=tuple(payload.get("h", "").split()),
        sentences=tuple(tuple(sentence.split()) for sentence in payload.get("z", ())),
    )
    return SpanHit(str(stored.get_first("document")), payload["v"], span, score)
