"""The retriever's vector leg: the query's vector (embedded once per retrieval, started by the caller) against the
span vectors of the targets' model — on its own, for the retriever to fuse with its lexical leg, or with the
lexical terms in one hybrid request to an engine that ranks hybrid queries itself
(:attr:`~orc.search.port.SearchEngine.native_hybrid`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from orc.search.lexical_leg import TITLE_WEIGHT, PreparedQuery
from orc.search.port import SearchEngine, SearchRequest, SpanHit
from orc.search.targets import RankedSpan, Target, search_filter

if TYPE_CHECKING:  # numpy loads only where vectors are made
    from orc.search.vectors import Matrix

logger = logging.getLogger(__name__)


async def query_vector_of(query_vector: asyncio.Task[Matrix]) -> tuple[Matrix | None, str | None]:
    """The query's vector, or why there is none (``embedding_timeout``, ``embedding_unavailable``)."""
    try:
        return await query_vector, None
    except asyncio.CancelledError:
        raise
    except TimeoutError:
        return None, "embedding_timeout"
    except Exception as exc:
        # Provider errors can carry endpoint URLs: log the type only.
        logger.warning("embedding the retrieval query failed: %s", type(exc).__name__)
        return None, "embedding_unavailable"


async def vector_ranking(
    engine: SearchEngine,
    organization: str,
    targets: Sequence[Target],
    query_vector: asyncio.Task[Matrix] | None,
    depth: int,
    model: str,
) -> tuple[list[RankedSpan], str | None]:
    if query_vector is None:
        return [], None
    vector, error = await query_vector_of(query_vector)
    if vector is None:
        return [], error
    if not targets:
        return [], None
    hits = await engine.search(
        SearchRequest(
            filter=search_filter(organization, targets),
            limit=depth,
            vector=vector.tolist(),
            vector_model=model,
            mode="vector",
        )
    )
    return _ranked(targets, hits), None


async def hybrid_ranking(
    engine: SearchEngine,
    organization: str,
    targets: Sequence[Target],
    prepared: PreparedQuery | None,
    vector: Matrix,
    depth: int,
    model: str,
) -> list[RankedSpan]:
    """The engine's own hybrid ranking of ``targets``: the lexical leg's weighted terms, the question as asked and
    the query's vector in one request, fused (and re-ranked) by the engine."""
    hits = await engine.search(
        SearchRequest(
            filter=search_filter(organization, targets),
            limit=depth,
            terms=prepared.weights if prepared is not None else {},
            text=prepared.text if prepared is not None else None,
            title_weight=TITLE_WEIGHT,
            vector=vector.tolist(),
            vector_model=model,
            mode="hybrid",
        )
    )
    return _ranked(targets, hits)


def _ranked(targets: Sequence[Target], hits: Sequence[SpanHit]) -> list[RankedSpan]:
    """The hits of the targets' current versions, weighted by their targets."""
    by_id = {target.document_id: target for target in targets}
    return [
        RankedSpan(target, hit.span, hit.score * target.weight)
        for hit in hits
        if (target := by_id.get(hit.document_id)) is not None and hit.version == target.version
    ]
