"""Running the vector leg beside the lexical one: the query is embedded once, while the lexical leg ranks.

The lexical leg is CPU work; with embeddings on it runs in a worker thread so the query's embedding request is
on the wire meanwhile, and the span vectors of the searched documents are read (cache, else store) at the same
time. A turn therefore waits for the slower of the two legs, not their sum. When the embedding request fails or
times out, the lexical ranking is used alone and the result says why; a turn never fails for its vector leg.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from orc.contracts import RetrievalLegs
from orc.documents.text_store import DocumentText
from orc.documents.vectors import SpanVectors, VectorHit, nearest

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class VectorLeg:
    """What the vector leg found, and which searched documents it could not search (no vectors yet)."""

    hits: list[VectorHit]
    lexical_only: list[int] = field(default_factory=list)
    error: str | None = None

    def legs(self, label: str, names: Sequence[str]) -> RetrievalLegs:
        """``metadata.retrieval`` for a search whose documents are ``names`` (in searched order)."""
        waiting = [names[index] for index in self.lexical_only]
        if self.error is not None or (not self.hits and len(waiting) == len(names)):
            return RetrievalLegs(legs=["lexical"], embeddings=label, lexical_only=waiting, vector_error=self.error)
        return RetrievalLegs(legs=["lexical", "vector"], fusion="rrf", embeddings=label, lexical_only=waiting)


async def beside_lexical(
    vectors: SpanVectors,
    query: str,
    texts: Sequence[DocumentText],
    weights: Sequence[float],
    lexical: Callable[[], T],
    depth: int,
) -> tuple[T, VectorLeg]:
    """Run ``lexical`` (in a thread) while the query is embedded and the texts' vectors are read; the lexical
    result and the ``depth`` nearest spans."""
    query_vector = asyncio.create_task(vectors.embed_query(query))
    matrices = asyncio.create_task(vectors.matrices(texts))
    try:
        lexical_result = await asyncio.to_thread(lexical)
        found = await matrices
    except BaseException:
        query_vector.cancel()
        matrices.cancel()
        raise
    lexical_only = [index for index, matrix in enumerate(found) if matrix is None]
    try:
        vector = await query_vector
    except asyncio.CancelledError:
        raise
    except TimeoutError:
        return lexical_result, VectorLeg([], lexical_only, "embedding_timeout")
    except Exception as exc:
        # Provider errors can carry endpoint URLs: log the type only.
        logger.warning("embedding the retrieval query failed: %s", type(exc).__name__)
        return lexical_result, VectorLeg([], lexical_only, "embedding_unavailable")
    return lexical_result, VectorLeg(nearest(vector, found, weights, depth), lexical_only)
