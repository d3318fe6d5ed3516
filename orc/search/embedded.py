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
- **Vectors** are one float32 matrix per document in the SQLite file (the engine's truth for them). A query whose
  scope holds few spans (a session's, a team's) is answered exactly: one matrix product per document, with a
  per-process cache bounded in bytes. Past that, an exact scan reads every vector of the organization (1.5 GB at
  a million spans of 384 dimensions), so the organization's vectors are also folded, in the background, into
  immutable HNSW segments beside the lexical index (:mod:`orc.search.vector_segments`), memory-mapped by every
  process; only the vectors of documents indexed since the last fold are scanned exactly. A hit whose vector set
  is no longer current (replaced, deleted) is dropped, so the next search after a replace finds the new vectors
  and never the old, in every process, whether or not they were folded yet.
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
    # Vector sets get an entry number that is never reused (the key of their rows in the ANN segments) and say
    # which segment holds them. The old table's rows are dropped and their documents marked as without vectors:
    # the retriever gives them their stored vectors again in the background.
    """
    DROP TABLE vectors;
    UPDATE documents SET vector_model = NULL;
    CREATE TABLE vector_sets (
        entry INTEGER PRIMARY KEY AUTOINCREMENT,
        organization TEXT NOT NULL,
        document_id TEXT NOT NULL,
        version TEXT NOT NULL,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL,
        spans INTEGER NOT NULL,
        segment INTEGER,
        data BLOB NOT NULL,
        UNIQUE (organization, document_id)
    );
    CREATE INDEX vector_sets_by_segment ON vector_sets (organization, segment);
    CREATE TABLE vector_segments (
        segment INTEGER PRIMARY KEY AUTOINCREMENT,
        organization TEXT NOT NULL,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL,
        spans INTEGER NOT NULL,
        file TEXT NOT NULL
    );
    """,
)
EXACT_SPANS = 20_000
"""A vector query whose scope holds at most this many spans is answered exactly (a few milliseconds); above it the
organization's ANN segments answer, and only the delta not yet folded into one is scanned exactly."""
FOLD_SPANS = 20_000
"""Spans of vectors the delta holds before they are folded into a new segment."""
MERGE_FACTOR = 4
"""Segments of one size class merged into one when there are this many."""
MAX_SEGMENT_SPANS = 200_000
"""No merge makes a segment bigger: the process that builds one holds its vectors in memory meanwhile (about
150 MB at 384 dimensions in half precision, plus the graph)."""


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
class _VectorSet:
    entry: int
    document_id: str
    version: str
    model: str
    spans: int
    segment: int | None


@dataclass(frozen=True, slots=True)
class _Segment:
    segment: int
    model: str
    dims: int
    spans: int
    file: str


@dataclass(frozen=True, slots=True)
class _Directory:
    """One organization's rows of the ``documents`` table, its vector sets and segments, as this process last
    read them."""

    rows: dict[str, _Row]
    spans: int
    tokens: int
    owners: frozenset[str]
    vector_sets: dict[int, _VectorSet]
    segments: tuple[_Segment, ...]


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

    def _try_lock(descriptor: int) -> bool:
        try:
            msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

else:
    import fcntl

    def _lock(descriptor: int) -> None:
        fcntl.flock(descriptor, fcntl.LOCK_EX)

    def _unlock(descriptor: int) -> None:
        fcntl.flock(descriptor, fcntl.LOCK_UN)

    def _try_lock(descriptor: int) -> bool:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


class EmbeddedSearchEngine:
    """:class:`~orc.search.port.SearchEngine` on the local disk under ``root``; see the module docstring."""

    def __init__(
        self,
        root: Path,
        *,
        vector_cache_bytes: int = VECTOR_CACHE_BYTES,
        exact_spans: int = EXACT_SPANS,
        fold_spans: int = FOLD_SPANS,
        merge_factor: int = MERGE_FACTOR,
        max_segment_spans: int = MAX_SEGMENT_SPANS,
        fold_in_background: bool = True,
    ) -> None:
        """``exact_spans`` … ``max_segment_spans``: where vector queries turn approximate and how segments are
        made (see the constants); ``fold_in_background=False`` folds and merges inside the write that made them
        due, before it returns (tests, and a bulk load that searches right after)."""
        from orc.search.vector_segments import SegmentViews

        self._root = root / f"v{LAYOUT}"
        self._exact_spans = exact_spans
        self._fold_spans = max(1, fold_spans)
        self._merge_factor = max(2, merge_factor)
        self._max_segment_spans = max_segment_spans
        self._fold_in_background = fold_in_background
        self._segment_views = SegmentViews()
        self._maintaining: dict[str, asyncio.Task[None]] = {}
        self._schema: Any = None
        self._indexes: dict[str, _Lexical] = {}
        self._indexes_lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._db_lock = threading.Lock()
        self._pending: dict[str, list[tuple[_Operation, asyncio.Future[None]]]] = {}
        self._flushing: dict[str, asyncio.Task[None]] = {}
        self._vectors: OrderedDict[tuple[str, int], npt.NDArray[np.float32]] = OrderedDict()
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

    def _organization_folder(self, kind: str, organization: str) -> Path:
        return self._root / kind / hashlib.sha256(organization.encode()).hexdigest()[:32]

    def _lexical(self, organization: str) -> _Lexical:
        with self._indexes_lock:
            found = self._indexes.get(organization)
            if found is None:
                if self._schema is None:
                    self._schema = _schema()
                folder = self._organization_folder("lexical", organization)
                found = self._indexes[organization] = _Lexical(folder, self._schema)
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
                    if self._fold_in_background and any(
                        isinstance(operation, _Upsert) and operation.document.vectors is not None
                        for operation, _ in batch
                    ):
                        self._start_maintenance(organization)
        finally:
            self._flushing.pop(organization, None)

    def _start_maintenance(self, organization: str) -> None:
        if organization in self._maintaining or self._closed:
            return
        task = asyncio.create_task(asyncio.to_thread(self._maintain, organization), name="search-vectors")
        self._maintaining[organization] = task

        def done(finished: asyncio.Task[None]) -> None:
            self._maintaining.pop(organization, None)
            if not finished.cancelled() and (error := finished.exception()) is not None:
                logger.warning("folding span vectors failed: %s", type(error).__name__)

        task.add_done_callback(done)

    async def compact(self, organization: str) -> None:
        """Fold the vectors of recently indexed documents into ANN segments and merge segments now (otherwise
        done in the background after writes): a search afterwards scans nothing exactly but small scopes."""
        running = self._maintaining.get(organization)
        if running is not None:
            await asyncio.gather(running, return_exceptions=True)
        await asyncio.to_thread(self._maintain, organization, wait=True)

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
                        "DELETE FROM vector_sets WHERE organization = ? AND document_id = ?",
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
                # A new entry number even for the same version: the old one's rows in a segment are dropped by
                # number, never mistaken for the new ones.
                db.execute(
                    "DELETE FROM vector_sets WHERE organization = ? AND document_id = ?",
                    (organization, document.document_id),
                )
                if has_vectors and document.vector_model is not None and document.vectors is not None:
                    import numpy as np

                    matrix = np.ascontiguousarray(np.asarray(document.vectors, dtype="<f4"))
                    db.execute(
                        "INSERT INTO vector_sets (organization, document_id, version, model, dims, spans, data) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (
                            organization,
                            document.document_id,
                            document.version,
                            document.vector_model,
                            matrix.shape[1],
                            len(matrix),
                            matrix.tobytes(),
                        ),
                    )
        if not self._fold_in_background and any(
            isinstance(operation, _Upsert) and operation.document.vectors is not None for operation in operations
        ):
            self._maintain(organization, wait=True)

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
                vector_sets = {
                    entry: _VectorSet(entry, document_id, version_, model, spans, segment)
                    for entry, document_id, version_, model, spans, segment in db.execute(
                        "SELECT entry, document_id, version, model, spans, segment FROM vector_sets "
                        "WHERE organization = ?",
                        (organization,),
                    )
                }
                segments = tuple(
                    _Segment(*row)
                    for row in db.execute(
                        "SELECT segment, model, dims, spans, file FROM vector_segments WHERE organization = ? "
                        "ORDER BY segment",
                        (organization,),
                    )
                )
                found = _Directory(
                    rows=rows,
                    spans=sum(row.entry.spans for row in rows.values()),
                    tokens=sum(row.tokens for row in rows.values()),
                    owners=frozenset(row.owner for row in rows.values()),
                    vector_sets=vector_sets,
                    segments=segments,
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
        try:
            return self._vector_search_once(request)
        except FileNotFoundError:
            # A segment this process last read of was merged away meanwhile: read the directory again.
            with self._sql():
                self._data_version = None
            return self._vector_search_once(request)

    def _vector_search_once(self, request: SearchRequest) -> list[SpanHit]:
        import numpy as np

        from orc.search.vector_segments import entry_of

        query = np.asarray(request.vector, dtype=np.float32).reshape(-1)
        where = request.filter
        directory = self._directory(where.organization)
        model = request.vector_model
        of_model = [item for item in directory.vector_sets.values() if item.model == model]
        in_scope = {
            item.entry: item
            for item in of_model
            if (row := directory.rows.get(item.document_id)) is not None
            and row.entry.version == item.version
            and (where.owners is None or row.owner in where.owners)
            and (where.documents is None or item.document_id in where.documents)
        }
        scope_spans = sum(found.spans for found in in_scope.values())
        segments = [segment for segment in directory.segments if segment.model == model and segment.dims == len(query)]
        approximate = bool(segments) and scope_spans > self._exact_spans
        exact = [item for item in in_scope.values() if not approximate or item.segment is None]
        found: list[tuple[float, int, int]] = []  # (similarity, entry, ordinal)
        for vector_set in sorted(exact, key=lambda item: (item.document_id, item.entry)):
            matrix = self._matrix(where.organization, vector_set)
            if matrix is None or matrix.shape[1] != len(query) or not len(matrix):
                continue
            scores = matrix @ query
            limit = min(request.limit, len(scores))
            top = np.argpartition(-scores, limit - 1)[:limit] if len(scores) > limit else np.arange(len(scores))
            found.extend((float(scores[row]), vector_set.entry, int(row)) for row in top)
        if approximate:
            # Ask each graph for enough neighbours that the scope's share of them still fills the limit.
            model_spans = sum(item.spans for item in of_model) or 1
            share = max(scope_spans / model_spans, 1e-6)
            count = min(max(2 * request.limit, int(2 * request.limit / share)), 4096)
            folder = self._organization_folder("vectors", where.organization)
            self._segment_views.retain(folder, [folder / segment.file for segment in directory.segments])
            for segment in segments:
                for key_, similarity in self._segment_views.search(folder / segment.file, query, count):
                    entry, ordinal = entry_of(key_)
                    if entry in in_scope and ordinal < in_scope[entry].spans:
                        found.append((similarity, entry, ordinal))
        best: dict[tuple[int, int], float] = {}
        for similarity, entry, ordinal in found:
            best[(entry, ordinal)] = max(similarity, best.get((entry, ordinal), -2.0))
        ranked = sorted(best.items(), key=lambda item: (-item[1], in_scope[item[0][0]].document_id, item[0][1]))[
            : request.limit
        ]
        wanted: dict[str, list[int]] = {}
        for entry, ordinal in (key_ for key_, _ in ranked):
            wanted.setdefault(in_scope[entry].document_id, []).append(ordinal)
        stored = {(hit.document_id, hit.span.ordinal): hit for hit in self._spans_of_many(where.organization, wanted)}
        hits = []
        for (entry, ordinal), value in ranked:
            vector_set = in_scope[entry]
            span = stored.get((vector_set.document_id, ordinal))
            if span is not None and span.version == vector_set.version:
                hits.append(SpanHit(vector_set.document_id, vector_set.version, span.span, round(value, 6)))
        return hits

    def _matrix(self, organization: str, vector_set: _VectorSet) -> npt.NDArray[np.float32] | None:
        key = (organization, vector_set.entry)
        with self._vectors_lock:
            cached = self._vectors.get(key)
            if cached is not None:
                self._vectors.move_to_end(key)
                return cached
        with self._sql() as db:
            row = db.execute("SELECT dims, data FROM vector_sets WHERE entry = ?", (vector_set.entry,)).fetchone()
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

    # -- vector segments ---------------------------------------------------------------------------------------

    def _maintain(self, organization: str, *, wait: bool = False) -> None:
        """Fold the delta into segments and merge segments until nothing is due. One process at a time per
        organization (a lock of its own, not the write lock: writes and searches go on meanwhile); a process
        that finds it taken leaves the work to the one holding it."""
        folder = self._organization_folder("vectors", organization)
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / ".orc-fold.lock", "a+b") as handle:
            if wait:
                _lock(handle.fileno())
            elif not _try_lock(handle.fileno()):
                return
            try:
                while not (self._closed and not wait) and self._maintenance_step(organization, folder):
                    pass
            finally:
                _unlock(handle.fileno())

    def _maintenance_step(self, organization: str, folder: Path) -> bool:
        """One fold or merge, if one is due; whether one was made."""
        from orc.search.vector_segments import write_segment

        with self._sql() as db:
            delta = db.execute(
                "SELECT model, dims, SUM(spans), GROUP_CONCAT(entry) FROM vector_sets "
                "WHERE organization = ? AND segment IS NULL GROUP BY model, dims",
                (organization,),
            ).fetchall()
            segments = [
                _Segment(*row)
                for row in db.execute(
                    "SELECT segment, model, dims, spans, file FROM vector_segments WHERE organization = ?",
                    (organization,),
                )
            ]
        merged: list[_Segment] = []
        entries: list[int] = []
        plan: tuple[str, int] | None = None
        for model, dims, spans, listed in delta:
            if spans >= self._fold_spans:
                plan, entries = (model, dims), [int(entry) for entry in listed.split(",")]
                break
        if plan is None:
            merged = self._due_merge(segments)
            if not merged:
                return False
            plan = (merged[0].model, merged[0].dims)
            with self._sql() as db:
                marks = ",".join("?" * len(merged))
                entries = [
                    entry
                    for (entry,) in db.execute(
                        f"SELECT entry FROM vector_sets WHERE segment IN ({marks})",
                        [segment.segment for segment in merged],
                    )
                ]
        model, dims = plan
        name, count = write_segment(folder, dims, self._vector_parts(entries, dims))
        with self._sql() as db, db:
            self._directories.pop(organization, None)
            cursor = db.execute(
                "INSERT INTO vector_segments (organization, model, dims, spans, file) VALUES (?, ?, ?, ?, ?)",
                (organization, model, dims, count, name),
            )
            segment = cursor.lastrowid
            # Entries replaced or deleted meanwhile are gone from the table: their rows in the new segment are
            # dead keys, dropped at search time and at the next merge.
            for first in range(0, len(entries), 500):
                chunk = entries[first : first + 500]
                db.execute(
                    f"UPDATE vector_sets SET segment = ? WHERE entry IN ({','.join('?' * len(chunk))})",
                    [segment, *chunk],
                )
            for old in merged:
                db.execute("DELETE FROM vector_segments WHERE segment = ?", (old.segment,))
        for old in merged:
            with contextlib.suppress(OSError):  # mapped elsewhere on Windows: left for the OS to refuse later
                (folder / old.file).unlink()
        return True

    def _due_merge(self, segments: Sequence[_Segment]) -> list[_Segment]:
        """The smallest size class with ``merge_factor`` segments (of one model) that may still grow."""
        import math

        classes: dict[tuple[str, int, int], list[_Segment]] = {}
        for segment in segments:
            if segment.spans * 2 > self._max_segment_spans:
                continue
            size_class = int(math.log(max(segment.spans, 1) / self._fold_spans + 1, self._merge_factor))
            classes.setdefault((segment.model, segment.dims, size_class), []).append(segment)
        for _, members in sorted(classes.items(), key=lambda item: item[0][2]):
            if len(members) < self._merge_factor:
                continue
            chosen: list[_Segment] = []
            for segment in sorted(members, key=lambda segment: segment.spans)[: self._merge_factor]:
                if sum(member.spans for member in chosen) + segment.spans > self._max_segment_spans:
                    break
                chosen.append(segment)
            if len(chosen) >= 2:
                return chosen
        return []

    def _vector_parts(self, entries: Sequence[int], dims: int) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        import numpy as np

        for first in range(0, len(entries), 200):
            chunk = entries[first : first + 200]
            with self._sql() as db:
                rows = db.execute(
                    f"SELECT entry, dims, data FROM vector_sets WHERE entry IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
            for entry, row_dims, data in rows:
                if row_dims == dims:
                    yield entry, np.frombuffer(data, dtype="<f4").reshape(-1, dims)

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
                (tantivy.Occur.Must, _ordinals(tantivy, schema, ordinals)),
            ]
        )
        searcher = lexical.searcher()
        found = searcher.search(query, len(ordinals), count=False).hits
        hits = [_hit(searcher.doc(address), 0.0) for _, address in found]
        hits.sort(key=lambda hit: hit.span.ordinal)
        return hits

    def _spans_of_many(self, organization: str, wanted: dict[str, list[int]]) -> list[SpanHit]:
        """The spans at ``wanted``'s ordinals of each of its documents, in one search of the index."""
        if not wanted:
            return []
        import tantivy

        lexical = self._lexical(organization)
        schema = lexical.schema
        clauses = [
            (
                tantivy.Occur.Should,
                tantivy.Query.boolean_query(
                    [
                        (tantivy.Occur.Must, tantivy.Query.term_query(schema, "document", document_id)),
                        (tantivy.Occur.Must, _ordinals(tantivy, schema, sorted(set(ordinals)))),
                    ]
                ),
            )
            for document_id, ordinals in wanted.items()
        ]
        searcher = lexical.searcher()
        count = sum(len(set(ordinals)) for ordinals in wanted.values())
        found = searcher.search(tantivy.Query.boolean_query(clauses), count, count=False).hits
        return [_hit(searcher.doc(address), 0.0) for _, address in found]

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
        while self._flushing or self._maintaining:
            await asyncio.gather(*self._flushing.values(), *self._maintaining.values(), return_exceptions=True)
        await asyncio.to_thread(self._close)

    def _close(self) -> None:
        with self._db_lock:
            if self._db is not None:
                self._db.close()
                self._db = None
        with self._indexes_lock:
            self._indexes.clear()
        self._segment_views.clear()


def _empty(where: SearchFilter) -> bool:
    return (where.owners is not None and not where.owners) or (where.documents is not None and not where.documents)


def _ordinals(tantivy: Any, schema: Any, ordinals: Sequence[int]) -> Any:
    """Spans by ordinal through the ordinal's postings: a term set query on the numeric field reads the field's
    column for every span of the organization instead (tens of milliseconds at a million spans)."""
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "ordinal", ordinal)) for ordinal in ordinals]
    )


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
