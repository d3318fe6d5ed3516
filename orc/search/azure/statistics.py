"""Corpus statistics from Azure AI Search, which has no call for them: span and token counts summed over an
organization's head items, and one count query per term — both cached briefly (they steer ranking, never which
spans are returned) and dropped after a write of this process."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from cachetools import TTLCache

from orc.search.azure.errors import translated
from orc.search.azure.queries import PAGE, rows
from orc.search.azure.schema import odata_literal, phrase, scope_filter
from orc.search.port import SearchFilter, TermStatistics

if TYPE_CHECKING:
    from azure.search.documents.aio import SearchClient

COUNT_CONCURRENCY = 8
"""Term-count queries in flight at once for one statistics call."""
MAX_CACHED_TERMS = 50_000
"""Term counts a process keeps (the least recently used go first: they are cheap to ask again)."""
MAX_CACHED_ORGANIZATIONS = 1_000
"""Organizations whose span and token counts a process keeps."""
KEPT_SECONDS = 60.0
"""How long a count is used before it is asked again."""


class CorpusStatistics:
    """Statistics of the organizations in ``client``'s index, each kept :data:`KEPT_SECONDS`."""

    def __init__(self, client: SearchClient) -> None:
        self._client = client
        self._corpus: TTLCache[str, tuple[int, int]] = TTLCache(
            MAX_CACHED_ORGANIZATIONS, ttl=KEPT_SECONDS, timer=time.monotonic
        )
        self._frequencies: TTLCache[tuple[str, str], int] = TTLCache(
            MAX_CACHED_TERMS, ttl=KEPT_SECONDS, timer=time.monotonic
        )

    async def statistics(self, organization: str, terms: Sequence[str]) -> TermStatistics:
        """Span count, average length and the span frequency of each of ``terms`` (absent: none)."""
        spans, tokens = await self._corpus_size(organization)
        asked = list(dict.fromkeys(term for term in terms if term))
        counts = await self._term_counts(organization, asked) if spans else {}
        return TermStatistics(
            spans=spans,
            average_length=tokens / spans if spans else 0.0,
            frequencies={term: count for term, count in counts.items() if count > 0},
        )

    async def _corpus_size(self, organization: str) -> tuple[int, int]:
        cached = self._corpus.get(organization)
        if cached is not None:
            return cached
        spans = tokens = 0
        where = scope_filter(SearchFilter(organization), heads=True)
        last: str | None = None
        while True:
            # Paged by document id (``$skip`` stops at 100,000): each page starts after the last id seen.
            page_filter = where if last is None else f"{where} and document_id gt {odata_literal(last)}"
            found = await rows(
                self._client, page_filter, ["document_id", "spans", "tokens"], PAGE, order_by=["document_id asc"]
            )
            for row in found:
                spans += int(row.get("spans") or 0)
                tokens += int(row.get("tokens") or 0)
            if len(found) < PAGE:
                break
            last = found[-1]["document_id"]
        self._corpus[organization] = (spans, tokens)
        return spans, tokens

    async def _term_counts(self, organization: str, terms: Sequence[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        missing = []
        for term in terms:
            cached = self._frequencies.get((organization, term))
            if cached is not None:
                counts[term] = cached
            else:
                missing.append(term)
        gate = asyncio.Semaphore(COUNT_CONCURRENCY)
        where = scope_filter(SearchFilter(organization))

        async def count(term: str) -> None:
            async with gate, translated("the search index"):
                found = await self._client.search(
                    phrase(term),
                    query_type="simple",
                    search_fields=["terms"],
                    filter=where,
                    include_total_count=True,
                    top=0,
                )
                counts[term] = int(await found.get_count() or 0)
            self._frequencies[(organization, term)] = counts[term]

        await asyncio.gather(*(count(term) for term in missing))
        return counts

    def forget(self, organization: str) -> None:
        """Drop ``organization``'s cached statistics (after a write of this process)."""
        self._corpus.pop(organization, None)
        for key in [key for key in self._frequencies if key[0] == organization]:
            self._frequencies.pop(key, None)
