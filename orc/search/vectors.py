"""Span vectors: made when a document is processed, stored beside its text, cached per process, searched by cosine.

Where they live: in the ``document_text`` collection, filed under the text version's own id prefix
(:func:`~orc.search.text_store.version_prefix`), so every backend keeps them (SQLite, memory, Cosmos DB) and a
superseded or deleted version takes its vectors with it. One head item (model key, dimensions, span count, the
``spans_hash`` they were made from) and parts of little-endian float32 rows in base64 — about 5.5 characters a
dimension instead of JSON's ~20, each part under :data:`PART_CHARS` so no item nears Cosmos DB's 2 MB cap. Items
are keyed by the embedding model's key: a change of model finds nothing stored and re-embeds.

Like the lexical index, vectors are derived data: cached per process by (``extracted_text_hash``,
``chunking_version``, model key), loaded from the store when missing, and — for a document processed before
embeddings were configured — made lazily in the background, never on a turn's critical path.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from orc.models.embeddings import EmbeddingModel, model_key
from orc.search.spans import Span
from orc.search.text_store import DocumentText, VectorLocation, version_prefix
from orc.storage.ports import DocumentCollection

logger = logging.getLogger(__name__)

Matrix = npt.NDArray[np.float32]
"""Rows of unit length, one per span (cosine similarity is a dot product)."""
VectorKey = tuple[str, str, str]
"""(``extracted_text_hash``, ``chunking_version``, model key)."""

PART_CHARS = 1_000_000
"""Base64 characters of vectors per stored part (about 730 spans of 1,536 dimensions)."""
RECIPE = "t1"
"""What is embedded of a span (:func:`embedded_text`); part of the stored key, so a change of it re-embeds."""
RETRY_AFTER_SECONDS = 60.0
"""How long a document whose background embedding failed waits before a turn may schedule it again."""


def embedded_text(span: Span) -> str:
    """A span as it is embedded: its section's title path first, so a span is found by what its section is about."""
    return f"{span.section}\n{span.text}" if span.section else span.text


def normalized(rows: Sequence[Sequence[float]]) -> Matrix:
    """``rows`` as a float32 matrix of unit rows (a zero row stays zero: it matches nothing)."""
    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError("vectors must be a non-empty list of equal-length rows")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


class SpanVectorStore:
    """Saves and loads a text version's span vectors in the ``document_text`` collection."""

    def __init__(self, collection: DocumentCollection) -> None:
        self._items = collection

    @staticmethod
    def _prefix(location: VectorLocation, key: str) -> str:
        return f"{version_prefix(location.document_id, location.content_hash)}v{key}:"

    async def save(self, location: VectorLocation, key: str, spans_hash: str, matrix: Matrix) -> None:
        """Store ``matrix`` (one row per span) made by model ``key`` from the spans of ``spans_hash`` (idempotent)."""
        count, dims = matrix.shape
        per_part = max(1, (PART_CHARS * 3 // 4) // max(dims * 4, 1))
        prefix = self._prefix(location, key)
        parts = 0
        # Parts first, head last: a reader that finds the head finds every part it names.
        for parts, first in enumerate(range(0, count, per_part), start=1):
            rows = np.ascontiguousarray(matrix[first : first + per_part], dtype="<f4")
            body = {"kind": "span_vectors_part", "part": parts, "rows": len(rows), "data": _encode(rows)}
            await self._items.upsert(location.partition_key, f"{prefix}{parts:05d}", body)
        head = {
            "kind": "span_vectors",
            "document_id": location.document_id,
            "model": key,
            "dims": dims,
            "spans": count,
            "spans_hash": spans_hash,
            "parts": parts,
        }
        await self._items.upsert(location.partition_key, f"{prefix}00000", head)

    async def load(self, location: VectorLocation, key: str, spans_hash: str) -> Matrix | None:
        """The stored matrix, or ``None`` when missing, incomplete or made from other spans."""
        found = sorted(
            await self._items.query(location.partition_key, id_prefix=self._prefix(location, key)),
            key=lambda item: item.id,
        )
        if not found or found[0].body.get("kind") != "span_vectors":
            return None
        head = found[0].body
        parts = [item.body for item in found[1:]]
        if head.get("spans_hash") != spans_hash or len(parts) != head.get("parts"):
            return None
        dims = int(head["dims"])
        rows = [_decode(part["data"], int(part["rows"]), dims) for part in parts]
        matrix = np.concatenate(rows) if rows else np.zeros((0, dims), dtype=np.float32)
        return matrix if len(matrix) == head.get("spans") else None


def _encode(rows: npt.NDArray[np.float32]) -> str:
    return base64.b64encode(rows.tobytes()).decode("ascii")


def _decode(data: str, rows: int, dims: int) -> Matrix:
    return np.frombuffer(base64.b64decode(data), dtype="<f4").reshape(rows, dims).astype(np.float32)


class VectorCache:
    """A per-process LRU of span vectors, bounded by the number of rows it holds. Thread-safe."""

    def __init__(self, max_rows: int = 300_000) -> None:
        if max_rows < 1:
            raise ValueError("max_rows must be positive")
        self._max_rows = max_rows
        self._entries: OrderedDict[VectorKey, Matrix] = OrderedDict()
        self._rows = 0
        self._lock = threading.Lock()

    def get(self, key: VectorKey) -> Matrix | None:
        """The cached matrix, marked as recently used."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: VectorKey, matrix: Matrix) -> None:
        """Cache ``matrix``, evicting the least recently used past the row budget (never the new one)."""
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._rows -= len(previous)
            self._entries[key] = matrix
            self._rows += len(matrix)
            while self._rows > self._max_rows and len(self._entries) > 1:
                _, evicted = self._entries.popitem(last=False)
                self._rows -= len(evicted)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One span found by the vector leg: which of the searched documents, which span, its cosine similarity."""

    document: int
    span: int
    score: float


def nearest(query: Matrix, matrices: Sequence[Matrix | None], weights: Sequence[float], limit: int) -> list[VectorHit]:
    """The ``limit`` spans most similar to ``query`` (a unit row) across ``matrices`` (``None``: not searched);
    each document's similarities are scaled by its weight."""
    found: list[VectorHit] = []
    for document, (matrix, weight) in enumerate(zip(matrices, weights, strict=True)):
        if matrix is None or not len(matrix) or matrix.shape[1] != query.shape[-1]:
            continue
        scores = (matrix @ query.reshape(-1)) * np.float32(weight)
        top = np.argpartition(-scores, limit - 1)[:limit] if len(scores) > limit else np.arange(len(scores))
        found.extend(VectorHit(document, int(span), float(scores[span])) for span in top)
    found.sort(key=lambda hit: (-hit.score, hit.document, hit.span))
    return [VectorHit(hit.document, hit.span, round(hit.score, 4)) for hit in found[:limit]]


class SpanVectors:
    """Makes, stores, caches and finds span vectors with one embedding model; close it to stop background work.

    Documents are identified by their text (``extracted_text_hash``, ``chunking_version``), as the lexical index
    is; where a text is stored (:class:`VectorLocation`) is told by whoever loads or makes it (:meth:`remember`),
    so a turn that holds only the text still finds its stored vectors.
    """

    def __init__(
        self,
        model: EmbeddingModel,
        store: SpanVectorStore,
        cache: VectorCache | None = None,
        *,
        query_timeout: float = 30.0,
        max_background: int = 2,
        max_locations: int = 100_000,
    ) -> None:
        self._model = model
        self._key = f"{model_key(model)}{RECIPE}"
        self._store = store
        self._cache = cache or VectorCache()
        self._query_timeout = query_timeout
        self._locations: OrderedDict[tuple[str, str], VectorLocation] = OrderedDict()
        self._max_locations = max_locations
        self._background: dict[VectorKey, asyncio.Task[None]] = {}
        self._failed: dict[VectorKey, float] = {}
        self._slots = asyncio.Semaphore(max_background)
        self._closed = False

    @property
    def label(self) -> str:
        """The model as answers' metadata names it (``openai:<model>``), without its endpoint."""
        return self._model.identity.partition("@")[0]

    @property
    def model(self) -> EmbeddingModel:
        """The embedding model."""
        return self._model

    @property
    def store_key(self) -> str:
        """What the vectors are filed under: the model's key and :data:`RECIPE`."""
        return self._key

    def key_of(self, text: DocumentText) -> VectorKey:
        """The cache key of ``text``'s vectors."""
        return (text.extracted_text_hash, text.chunking_version, self._key)

    def remember(self, text: DocumentText, location: VectorLocation) -> None:
        """Note where ``text`` is stored, so its vectors can be loaded (and saved) by text alone."""
        self._locations[(text.extracted_text_hash, text.chunking_version)] = location
        self._locations.move_to_end((text.extracted_text_hash, text.chunking_version))
        while len(self._locations) > self._max_locations:
            self._locations.popitem(last=False)

    def knows(self, text: DocumentText) -> bool:
        """Whether :meth:`remember` was told where ``text`` is stored."""
        return (text.extracted_text_hash, text.chunking_version) in self._locations

    async def embed_document(self, text: DocumentText, location: VectorLocation) -> int:
        """Embed ``text``'s spans in batches, store and cache them; the number of requests it took."""
        self.remember(text, location)
        key = self.key_of(text)
        spans = [embedded_text(span) for span in text.spans]
        if not spans:
            return 0
        batch = self._model.batch_size
        rows: list[list[float]] = []
        requests = 0
        for first in range(0, len(spans), batch):
            rows.extend(await self._model.embed(spans[first : first + batch], "spans"))
            requests += 1
        matrix = await asyncio.to_thread(normalized, rows)
        await self._store.save(location, self._key, text.spans_hash, matrix)
        self._cache.put(key, matrix)
        return requests

    async def embed_query(self, query: str) -> Matrix:
        """The unit vector of a turn's retrieval query: one request, bounded by the query timeout."""
        async with asyncio.timeout(self._query_timeout):
            (row,) = await self._model.embed([query], "query")
        return normalized([row])[0]

    async def matrices(self, texts: Sequence[DocumentText]) -> list[Matrix | None]:
        """Each text's vectors: cached, else loaded from the store; a text with none stored yet gets ``None`` and
        is embedded in the background (its turn searches it with the lexical leg only)."""
        found: list[Matrix | None] = [self._cache.get(self.key_of(text)) for text in texts]
        missing = [index for index, matrix in enumerate(found) if matrix is None]
        if missing:  # a warm turn finds every matrix cached: no task, no storage call
            loaded = await asyncio.gather(*(self._matrix(texts[index]) for index in missing))
            for index, matrix in zip(missing, loaded, strict=True):
                found[index] = matrix
        return found

    async def _matrix(self, text: DocumentText) -> Matrix | None:
        key = self.key_of(text)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        location = self._locations.get((text.extracted_text_hash, text.chunking_version))
        if location is None:
            return None  # a text that was never stored (extracted on the fly): nowhere to keep its vectors
        if key in self._background:
            return None
        try:
            loaded = await self._store.load(location, self._key, text.spans_hash)
        except Exception as exc:  # a storage hiccup costs this turn its vector leg, nothing more
            logger.warning("loading span vectors failed: %s", type(exc).__name__)
            return None
        if loaded is not None and len(loaded) == len(text.spans):
            self._cache.put(key, loaded)
            return loaded
        self._schedule(key, text, location)
        return None

    def _schedule(self, key: VectorKey, text: DocumentText, location: VectorLocation) -> None:
        if self._closed or key in self._background:
            return
        failed_at = self._failed.get(key)
        if failed_at is not None and time.monotonic() - failed_at < RETRY_AFTER_SECONDS:
            return
        task = asyncio.create_task(self._embed_later(key, text, location), name=f"embed-{location.document_id}")
        self._background[key] = task
        task.add_done_callback(lambda _: self._background.pop(key, None))

    async def _embed_later(self, key: VectorKey, text: DocumentText, location: VectorLocation) -> None:
        async with self._slots:
            try:
                await self.embed_document(text, location)
                self._failed.pop(key, None)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._failed[key] = time.monotonic()
                logger.warning("embedding %s in the background failed: %s", location.document_id, type(exc).__name__)

    async def settle(self) -> None:
        """Wait for the background embeddings running now (tests and benchmarks)."""
        while self._background:
            await asyncio.gather(*list(self._background.values()), return_exceptions=True)

    async def aclose(self) -> None:
        """Cancel background embeddings and wait for them to stop."""
        self._closed = True
        tasks = list(self._background.values())
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)
