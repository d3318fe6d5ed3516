"""The embedded engine's SQLite file (stdlib ``sqlite3``, WAL): which version of which document is indexed, token
totals for the corpus statistics, the span vectors and the ANN segments that hold them. SQLite's locking makes it
safe to share between processes as it is; each process keeps every organization's rows as it last read them
(:class:`Directory`) and reads them again only after a commit of any process."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orc.search.embedded.layout import MIGRATIONS
from orc.search.port import IndexedDocument, IndexedEntry

if TYPE_CHECKING:  # numpy loads only where vectors are searched or stored
    import numpy as np
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class Upsert:
    """A queued write: replace the document's entry."""

    document: IndexedDocument


@dataclass(frozen=True, slots=True)
class Delete:
    """A queued write: remove the document's entry."""

    document_id: str


Operation = Upsert | Delete


def operation_document_id(operation: Operation) -> str:
    """The document an operation writes."""
    return operation.document.document_id if isinstance(operation, Upsert) else operation.document_id


def writes_vectors(operations: Sequence[Operation]) -> bool:
    """Whether any of ``operations`` stores span vectors (and so may make a fold due)."""
    return any(isinstance(operation, Upsert) and operation.document.vectors is not None for operation in operations)


@dataclass(frozen=True, slots=True)
class Row:
    """A document's row: its entry, its owner and its token count."""

    entry: IndexedEntry
    owner: str
    tokens: int


@dataclass(frozen=True, slots=True)
class VectorSet:
    """One document version's span vectors: ``entry`` is never reused; ``segment`` is None while in the delta."""

    entry: int
    document_id: str
    version: str
    model: str
    spans: int
    segment: int | None


@dataclass(frozen=True, slots=True)
class Segment:
    """An ANN segment file of an organization's vectors of one model."""

    segment: int
    model: str
    dims: int
    spans: int
    file: str


@dataclass(frozen=True, slots=True)
class Directory:
    """One organization's rows of the ``documents`` table, its vector sets and segments, as this process last
    read them."""

    rows: dict[str, Row]
    spans: int
    tokens: int
    owners: frozenset[str]
    vector_sets: dict[int, VectorSet]
    segments: tuple[Segment, ...]


class DocumentsDatabase:
    """The SQLite file under ``root``, opened on first use; every call is safe from any thread."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        # Each organization's documents table, re-read only after a commit (SQLite's data_version says when
        # another process committed; this process's own commits drop the organization's copy).
        self._directories: dict[str, Directory] = {}
        self._data_version: int | None = None

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            self._root.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self._root / "documents.sqlite3", check_same_thread=False, timeout=30.0)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            with db:
                (version,) = db.execute("PRAGMA user_version").fetchone()
                for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                    db.executescript(f"BEGIN IMMEDIATE; {script}; PRAGMA user_version={number}; COMMIT;")
            self._db = db
        return self._db

    @contextlib.contextmanager
    def sql(self) -> Iterator[sqlite3.Connection]:
        """The connection, held by this thread meanwhile."""
        with self._lock:
            yield self._connection()

    def forget(self, organization: str) -> None:
        """Drop this process's copy of ``organization``'s rows (call with :meth:`sql` held, before a commit)."""
        self._directories.pop(organization, None)

    def read_again(self) -> None:
        """Read every organization's rows again at the next use (a segment listed was merged away meanwhile)."""
        with self._lock:
            self._data_version = None

    def directory(self, organization: str) -> Directory:
        """The organization's documents table (a cheap ``PRAGMA`` when nothing was committed since last read)."""
        with self.sql() as db:
            (version,) = db.execute("PRAGMA data_version").fetchone()
            if version != self._data_version:
                self._directories.clear()
                self._data_version = version
            found = self._directories.get(organization)
            if found is None:
                rows = {
                    document_id: Row(IndexedEntry(version_, spans, model), owner, tokens)
                    for document_id, version_, spans, tokens, model, owner in db.execute(
                        "SELECT document_id, version, spans, tokens, vector_model, owner FROM documents "
                        "WHERE organization = ?",
                        (organization,),
                    )
                }
                vector_sets = {
                    entry: VectorSet(entry, document_id, version_, model, spans, segment)
                    for entry, document_id, version_, model, spans, segment in db.execute(
                        "SELECT entry, document_id, version, model, spans, segment FROM vector_sets "
                        "WHERE organization = ?",
                        (organization,),
                    )
                }
                segments = tuple(
                    Segment(*row)
                    for row in db.execute(
                        "SELECT segment, model, dims, spans, file FROM vector_segments WHERE organization = ? "
                        "ORDER BY segment",
                        (organization,),
                    )
                )
                found = Directory(
                    rows=rows,
                    spans=sum(row.entry.spans for row in rows.values()),
                    tokens=sum(row.tokens for row in rows.values()),
                    owners=frozenset(row.owner for row in rows.values()),
                    vector_sets=vector_sets,
                    segments=segments,
                )
                self._directories[organization] = found
            return found

    def write(self, organization: str, operations: Sequence[Operation]) -> None:
        """The rows of a batch of writes, in one transaction."""
        with self.sql() as db, db:
            self.forget(organization)
            for operation in operations:
                if isinstance(operation, Delete):
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

    def matrix(self, entry: int) -> npt.NDArray[np.float32] | None:
        """The span vectors of vector set ``entry`` (None when it is gone)."""
        with self.sql() as db:
            row = db.execute("SELECT dims, data FROM vector_sets WHERE entry = ?", (entry,)).fetchone()
        if row is None:
            return None
        import numpy as np

        dims, data = row
        return np.frombuffer(data, dtype="<f4").reshape(-1, dims).astype(np.float32)

    def close(self) -> None:
        """Close the connection (opened again on next use)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
