"""The retriever's vector leg: the query's vector (embedded once per retrieval, started by the caller) against the
span vectors of the targets' model."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from orc.search.port import SearchEngine, SearchRequest
from orc.search.targets import RankedSpan, Target, search_filter

if TYPE_CHECKING:  # numpy loads only where vectors are made
    from orc.search.vectors import Matrix

logger = logging.getLogger(__name__)


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
    try:
        vector = await query_vector
    except asyncio.CancelledError:
        raise
    except TimeoutError:
        return [], "embedding_timeout"
    except Exception as exc:
        # Provider errors can carry endpoint URLs: log the type only.
        logger.warning("embedding the retrieval query failed: %s", type(exc).__name__)
        return [], "embedding_unavailable"
    if not targets:
        return [], None
    by_id = {target.document_id: target for target in targets}
    hits = await engine.search(
        SearchRequest(
            filter=search_filter(organization, targets),
            limit=depth,
            vector=vector.tolist(),
            vector_model=model,
            mode="vector",
        )
    )
    return [
        RankedSpan(target, hit.span, hit.score * target.weight)
        for hit in hits
        if (target := by_id.get(hit.document_id)) is not None and hit.version == target.version
    ], None
