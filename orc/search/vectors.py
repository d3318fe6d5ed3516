"""Span vectors: made when a document is processed and stored beside its text; searched by the search engine.

Where they live: in the ``document_text`` collection, filed under the text version's own id prefix
(:func:`~orc.search.text_store.version_prefix`), so every backend keeps them (SQLite, memory, Cosmos DB) and a
superseded or deleted version takes its vectors with it. One head item (model key, dimensions, span count, the
``spans_hash`` they were made from) and parts of little-endian float32 rows in base64 — about 5.5 characters a
dimension instead of JSON's ~20, each part under :data:`PART_CHARS` so no item nears Cosmos DB's 2 MB cap. Items
are keyed by the embedding model's key: a change of model finds nothing stored and re-embeds.

The stored vectors are the truth the search engine's copy is made from: a document indexed without them (processed
before embeddings were configured) gets them loaded or made in the background by the retriever, never on a turn's
critical path.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from orc.models.embeddings import EmbeddingModel, model_key
from orc.search.spans import Span
from orc.search.text_store import DocumentText, VectorLocation, version_prefix
from orc.storage.ports import DocumentCollection

logger = logging.getLogger(__name__)

Matrix = npt.NDArray[np.float32]
"""Rows of unit length, one per span (cosine similarity is a dot product)."""

PART_CHARS = 1_000_000
"""Base64 characters of vectors per stored part (about 730 spans of 1,536 dimensions)."""
RECIPE = "t1"
"""What is embedded of a span (:func:`embedded_text`); part of the stored key, so a change of it re-embeds."""


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


class SpanVectors:
    """Makes and stores span vectors with one embedding model, and embeds queries.

    Where they are searched is the search engine's business (:mod:`orc.search.port`): the retriever indexes a
    document with the vectors made (or loaded) here.
    """

    def __init__(self, model: EmbeddingModel, store: SpanVectorStore, *, query_timeout: float = 30.0) -> None:
        self._model = model
        self._key = f"{model_key(model)}{RECIPE}"
        self._store = store
        self._query_timeout = query_timeout

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

    async def embed_document(self, text: DocumentText, location: VectorLocation) -> Matrix:
        """Embed ``text``'s spans in batches and store them; the matrix (one unit row per span)."""
        spans = [embedded_text(span) for span in text.spans]
        if not spans:
            return np.zeros((0, 0), dtype=np.float32)
        batch = self._model.batch_size
        rows: list[list[float]] = []
        for first in range(0, len(spans), batch):
            rows.extend(await self._model.embed(spans[first : first + batch], "spans"))
        matrix = await asyncio.to_thread(normalized, rows)
        await self._store.save(location, self._key, text.spans_hash, matrix)
        return matrix

    async def load(self, text: DocumentText, location: VectorLocation) -> Matrix | None:
        """The stored vectors of ``text`` made by this model, or ``None`` (none yet, or a storage hiccup: the
        document is then searched by the lexical leg only, and its vectors made or loaded later)."""
        try:
            found = await self._store.load(location, self._key, text.spans_hash)
        except Exception as exc:
            logger.warning("loading span vectors failed: %s", type(exc).__name__)
            return None
        return found if found is not None and len(found) == len(text.spans) else None

    async def embed_query(self, query: str) -> Matrix:
        """The unit vector of a retrieval query: one request, bounded by the query timeout."""
        async with asyncio.timeout(self._query_timeout):
            (row,) = await self._model.embed([query], "query")
        return normalized([row])[0]
