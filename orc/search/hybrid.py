"""Running the vector leg beside the lexical one: the query is embedded once, while the rest of the search runs.

A caller starts the query's embedding (:func:`start_query`) as soon as it knows the query, before it reads the
documents it searches, so the request is on the wire while the storage reads, the lexical leg (CPU work, run on
the loop: a thread hop would cost more than it hides) and the reads of the span vectors (cache, else store)
happen. A search therefore waits for the slower of the two legs, not their sum. When the embedding request fails
or times out, the lexical ranking is used alone and the result says why; a turn never fails for its vector leg.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from orc.contracts import RetrievalLegs
from orc.search.text_store import DocumentText
from orc.search.vectors import Matrix, SpanVectors, VectorHit, nearest

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


def start_query(vectors: SpanVectors, query: str) -> asyncio.Task[Matrix]:
    """Start embedding ``query`` now; hand the task to :func:`beside_lexical` (or cancel it). A task its caller
    abandons (the search failed on bad input meanwhile) ends by itself within the query timeout, unobserved."""
    task = asyncio.create_task(vectors.embed_query(query), name="embed-query")
    task.add_done_callback(_observed)
    return task


def _observed(task: asyncio.Task[Matrix]) -> None:
    # Retrieving the exception keeps asyncio from logging it as never retrieved; beside_lexical reports it.
    if not task.cancelled():
        task.exception()


async def beside_lexical(
    vectors: SpanVectors,
    query_vector: asyncio.Task[Matrix],
    texts: Sequence[DocumentText],
    weights: Sequence[float],
    lexical: Callable[[], T],
    depth: int,
) -> tuple[T, VectorLeg]:
    """Read the texts' vectors and run ``lexical`` while the query's embedding (started by :func:`start_query`)
    is in flight; the lexical result and the ``depth`` nearest spans. Cancels ``query_vector`` on failure."""
    try:
        found = await vectors.matrices(texts)
        lexical_result = lexical()
    except BaseException:
        query_vector.cancel()
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
