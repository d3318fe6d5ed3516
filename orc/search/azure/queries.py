"""The read requests orc sends Azure AI Search, and how their results become hits: a span query (lexical, vector
or the service's hybrid, semantically re-ranked when configured) and a filtered listing of items."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orc.search.azure.errors import translated
from orc.search.azure.schema import SEMANTIC_CONFIGURATION, SPAN_FIELDS, lucene_query, odata_literal, scope_filter
from orc.search.port import IndexedSpan, SearchRequest, SpanHit

if TYPE_CHECKING:
    from azure.search.documents.aio import SearchClient

PAGE = 1000
"""Items per page when listing a document's items or an organization's heads (the service's largest ``top``)."""
SEMANTIC_WINDOW = 50
"""The semantic ranker re-ranks the first 50 results of the base query: a deeper ``top`` is not re-ranked."""


@dataclass(frozen=True, slots=True)
class SpanQuery:
    """One search request: its text (None: vector only) and the SDK's keyword options."""

    text: str | None
    options: dict[str, Any]
    semantic: bool

    @property
    def vector_only(self) -> bool:
        """No text: the scores are the vector query's."""
        return self.text is None


def span_query(request: SearchRequest, *, semantic: bool, dimensions: int | None) -> SpanQuery | None:
    """The request the service answers ``request`` with (None when it has nothing to search with): the weighted
    terms as a full-Lucene query, the vector as a ``VectorizedQuery`` of the request's model, both in one request
    for a hybrid query (fused by the service with RRF), and with ``semantic`` the semantic ranker over the text."""
    text = lucene_query(request.terms, request.title_weight) if request.mode != "vector" else ""
    vector = request.vector if request.mode != "lexical" and request.vector_model else None
    if vector is not None and dimensions is not None and len(vector) != dimensions:
        vector = None
    if not text and vector is None:
        return None
    from azure.search.documents.models import VectorizedQuery

    where = scope_filter(request.filter)
    if vector is not None:
        assert request.vector_model is not None
        model = f"vector_model eq {odata_literal(request.vector_model)}"
        # One filter serves both legs of a hybrid query: spans indexed without vectors stay findable by their
        # terms (a document whose vectors are being made), those of another model's vectors do not.
        where += f" and ({model} or vector_model eq null)" if text else f" and {model}"
    options: dict[str, Any] = {"filter": where, "select": list(SPAN_FIELDS), "top": request.limit}
    if vector is not None:
        options["vector_queries"] = [
            VectorizedQuery(
                vector=[float(value) for value in vector], k_nearest_neighbors=request.limit, fields="vector"
            )
        ]
    semantic = semantic and bool(text)
    if semantic:
        # The semantic ranker reads the query as words (simple syntax): the terms, on the tokens' fields.
        words = " ".join(term for term, weight in request.terms.items() if weight > 0)
        options |= {
            "query_type": "semantic",
            "semantic_configuration_name": SEMANTIC_CONFIGURATION,
            "search_fields": ["terms", "title_terms"],
            "semantic_query": request.text or words,
            "top": min(request.limit, SEMANTIC_WINDOW),
        }
        text = words
    elif text:
        options["query_type"] = "full"
        if vector is None:
            options["order_by"] = ["search.score() desc", "document_id asc", "ordinal asc"]
    return SpanQuery(text or None, options, semantic)


async def search_spans(client: SearchClient, query: SpanQuery, limit: int) -> list[SpanHit]:
    """The hits of ``query``, best first (a vector-only query's ties broken by document id, then ordinal)."""
    async with translated("the search index"):
        rows = [row async for row in await client.search(query.text, **query.options)]
    hits = [hit(row, semantic=query.semantic, vector_only=query.vector_only) for row in rows]
    if query.vector_only:
        hits.sort(key=lambda found: (-found.score, found.document_id, found.span.ordinal))
    return hits[:limit]


async def rows(
    client: SearchClient, where: str, select: list[str], top: int, *, order_by: list[str] | None = None
) -> list[dict[str, Any]]:
    """The items ``where`` selects (no text query), ``top`` at most."""
    async with translated("the search index"):
        pages = await client.search(None, filter=where, select=select, top=max(1, min(top, PAGE)), order_by=order_by)
        return [dict(row) async for row in pages]


def hit(row: Mapping[str, Any], *, semantic: bool, vector_only: bool) -> SpanHit:
    """A search result as a hit: its score is the reranker's with the semantic ranker, the cosine similarity for a
    vector-only query, the service's BM25 or RRF score otherwise."""
    if semantic and row.get("@search.rerankerScore") is not None:
        score = float(row["@search.rerankerScore"])
    else:
        score = float(row.get("@search.score") or 0.0)
        if vector_only and score > 0:
            # For the cosine metric the service scores 1 / (1 + (1 - cosine)): read it back as the cosine.
            score = 2.0 - 1.0 / score
    sentences = json.loads(row.get("sentences") or "[]")
    return SpanHit(
        document_id=row["document_id"],
        version=row["version"],
        span=IndexedSpan(
            ordinal=int(row["ordinal"]),
            span_id=row.get("span_id") or f"S{int(row['ordinal']) + 1}",
            page=row.get("page"),
            start=int(row.get("start") or 0),
            end=int(row.get("end") or 0),
            text=row.get("text") or "",
            section=row.get("section"),
            terms=(),
            sentences=tuple(tuple(sentence) for sentence in sentences),
        ),
        score=score,
    )
