"""The Azure AI Search engine: the clients, the index's preparation, and the port's calls, each sent through the
request builders of :mod:`orc.search.azure.queries`, the writer of :mod:`orc.search.azure.writes` and the
statistics of :mod:`orc.search.azure.statistics`; see :mod:`orc.search.azure` for why it looks like this."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from azure.core.exceptions import ResourceNotFoundError

from orc.errors import ConfigurationError
from orc.resources import MissingResource
from orc.search.azure.errors import translated
from orc.search.azure.queries import PAGE, hit, rows, search_spans, span_query
from orc.search.azure.schema import (
    DEFAULT_DIMENSIONS,
    HEAD_FIELDS,
    SPAN_FIELDS,
    SUGGESTER,
    document_filter,
    index_definition,
    odata_literal,
    schema_problems,
    scope_filter,
    vector_dimensions,
)
from orc.search.azure.statistics import CorpusStatistics
from orc.search.azure.writes import SpanWriter
from orc.search.port import (
    IndexedDocument,
    IndexedEntry,
    SearchFilter,
    SearchRequest,
    SpanHit,
    TermStatistics,
)

if TYPE_CHECKING:
    from azure.core.credentials import AzureKeyCredential
    from azure.core.credentials_async import AsyncTokenCredential
    from azure.search.documents.aio import SearchClient
    from azure.search.documents.indexes.aio import SearchIndexClient


AUTOCOMPLETE_TOP = 100
"""The most terms one ``autocomplete`` call returns."""


class AzureSearchEngine:
    """:class:`~orc.search.port.SearchEngine` on an Azure AI Search index; see the module docstring.

    Build it with :meth:`from_endpoint`, then :meth:`prepare` the index (check it, or create it where resources may
    be created) before the first call. ``retry_delay`` is the first backoff of a refused indexing item (doubled per
    attempt, :data:`~orc.search.azure.writes.ATTEMPTS` in all).
    """

    def __init__(
        self,
        client: SearchClient,
        index_client: SearchIndexClient,
        index_name: str,
        *,
        semantic: bool = False,
        dimensions: int | None = None,
        owned_credential: AsyncTokenCredential | None = None,
        retry_delay: float = 0.5,
    ) -> None:
        self._client = client
        self._indexes = index_client
        self._index_name = index_name
        self._semantic = semantic
        self._dimensions = dimensions
        self._owned_credential = owned_credential
        self._writer = SpanWriter(client, retry_delay=retry_delay)
        self._statistics = CorpusStatistics(client)

    @classmethod
    def from_endpoint(
        cls,
        endpoint: str,
        index_name: str,
        *,
        key: str | None = None,
        semantic: bool = False,
        dimensions: int | None = None,
        retry_delay: float = 0.5,
        retry_total: int = 3,
        **options: Any,
    ) -> AzureSearchEngine:
        """Clients for ``https://<service>.search.windows.net`` and the index ``index_name``: with an admin ``key``
        when given, otherwise Entra ID (:class:`azure.identity.aio.DefaultAzureCredential`, closed by
        :meth:`aclose`). ``options`` go to both SDK clients (``transport=`` in tests)."""
        from azure.search.documents.aio import SearchClient
        from azure.search.documents.indexes.aio import SearchIndexClient

        credential: AzureKeyCredential | AsyncTokenCredential
        owned: AsyncTokenCredential | None = None
        if key:
            from azure.core.credentials import AzureKeyCredential

            credential = AzureKeyCredential(key)
        else:
            from azure.identity.aio import DefaultAzureCredential  # heavy: only when really needed

            credential = owned = DefaultAzureCredential()
        settings = {
            "retry_total": retry_total,
            "connection_timeout": 10.0,
            "read_timeout": 30.0,
            **options,
        }
        try:
            client = SearchClient(endpoint, index_name, credential, **settings)
            indexes = SearchIndexClient(endpoint, credential, **settings)
        except (ValueError, TypeError):
            raise ConfigurationError("ORC_SEARCH_ENDPOINT is not a valid Azure AI Search endpoint URL") from None
        return cls(
            client,
            indexes,
            index_name,
            semantic=semantic,
            dimensions=dimensions,
            owned_credential=owned,
            retry_delay=retry_delay,
        )

    @property
    def native_hybrid(self) -> bool:
        """True: a hybrid query is the service's own (keyword and vector in one request, fused by RRF, then
        re-ranked by the semantic ranker when it is on)."""
        return True

    @property
    def index_name(self) -> str:
        """The index this engine reads and writes."""
        return self._index_name

    @property
    def dimensions(self) -> int | None:
        """The size of the index's vector field, once :meth:`prepare` has read it."""
        return self._dimensions

    # -- the index ---------------------------------------------------------------------------------------------

    async def prepare(
        self, *, create: bool, measure: Callable[[], Awaitable[int]] | None = None, dimensions: int | None = None
    ) -> list[MissingResource]:
        """Check the index against the schema orc writes (and learn its vector size); where ``create`` allows it,
        create a missing index or add what it lacks. Returns what is missing or unusable (nothing when ready).

        A new index's vector field gets ``measure()``'s size (the embedding model's, measured only when an index is
        created) or :data:`~orc.search.azure.schema.DEFAULT_DIMENSIONS`; ``dimensions``, when given, is the size an
        existing index must have."""
        name = self.index_name
        async with translated("the search index"):
            try:
                existing: dict[str, Any] | None = (await self._indexes.get_index(name)).as_dict()
            except ResourceNotFoundError:
                existing = None
        if existing is None:
            if not create:
                return [MissingResource("search index", name)]
            measured = await measure() if measure is not None and dimensions is None else None
            size = dimensions or measured or self._dimensions or DEFAULT_DIMENSIONS
            async with translated("the search index"):
                await self._indexes.create_or_update_index(index_definition(name, size))
            self._dimensions = size
            return []
        problems = schema_problems(existing, dimensions)
        if problems and create and not any("dimensions" in problem for problem in problems):
            # Adding fields and a suggester to an index is allowed in place; changing a vector size is not.
            size = vector_dimensions(existing) or DEFAULT_DIMENSIONS
            async with translated("the search index"):
                await self._indexes.create_or_update_index(index_definition(name, size))
                existing = (await self._indexes.get_index(name)).as_dict()
            problems = schema_problems(existing, dimensions)
        self._dimensions = vector_dimensions(existing)
        return [MissingResource("search index", name, "; ".join(problems))] if problems else []

    # -- writes ------------------------------------------------------------------------------------------------

    async def upsert(self, document: IndexedDocument) -> None:
        """Write the new version's spans, then its head, then delete every item of another version."""
        await self._writer.upsert(document, self._dimensions)
        self._statistics.forget(document.organization)

    async def delete(self, organization: str, document_id: str) -> None:
        """Delete the head first (the document is no longer indexed), then every span."""
        await self._writer.delete(organization, document_id)
        self._statistics.forget(organization)

    # -- reads -------------------------------------------------------------------------------------------------

    async def search(self, request: SearchRequest) -> list[SpanHit]:
        """Lexical, vector or the service's hybrid query inside the request's filter; semantic re-ranking of the
        lexical and hybrid ones when configured."""
        if request.limit < 1:
            return []
        query = span_query(request, semantic=self._semantic, dimensions=self._dimensions)
        if query is None:
            return []
        return await search_spans(self._client, query, request.limit)

    async def spans(self, organization: str, document_id: str, ordinals: Sequence[int]) -> list[SpanHit]:
        """The spans at ``ordinals`` of the version the head says is current."""
        wanted = sorted({ordinal for ordinal in ordinals if ordinal >= 0})
        if not wanted:
            return []
        entry = (await self.entries(organization, [document_id])).get(document_id)
        if entry is None:
            return []
        where = (
            document_filter(organization, document_id)
            + f" and version eq {odata_literal(entry.version)}"
            + " and ("
            + " or ".join(f"ordinal eq {int(ordinal)}" for ordinal in wanted)
            + ")"
        )
        found = await rows(self._client, where, list(SPAN_FIELDS), len(wanted), order_by=["ordinal asc"])
        hits = [dataclasses.replace(hit(row, semantic=False, vector_only=False), score=0.0) for row in found]
        return sorted(hits, key=lambda found: found.span.ordinal)

    async def entries(self, organization: str, document_ids: Sequence[str]) -> dict[str, IndexedEntry]:
        """The head items of ``document_ids``."""
        found: dict[str, IndexedEntry] = {}
        ids = list(dict.fromkeys(document_ids))
        for start in range(0, len(ids), PAGE):
            chunk = ids[start : start + PAGE]
            where = scope_filter(SearchFilter(organization, documents=frozenset(chunk)), heads=True)
            for row in await rows(self._client, where, list(HEAD_FIELDS), len(chunk)):
                found[row["document_id"]] = IndexedEntry(
                    version=row["version"], spans=int(row.get("spans") or 0), vector_model=row.get("vector_model")
                )
        return found

    async def statistics(self, organization: str, terms: Sequence[str]) -> TermStatistics:
        """Span and token counts from the heads, and one count query per term (both cached briefly)."""
        return await self._statistics.statistics(organization, terms)

    async def vocabulary(self, organization: str, prefix: str, limit: int) -> list[str]:
        """Terms that start with ``prefix``, from the index's suggester (at most 100 a call), in term order."""
        if limit < 1 or not prefix:
            return []
        async with translated("the search index"):
            found = await self._client.autocomplete(
                prefix,
                SUGGESTER,
                mode="oneTerm",
                filter=scope_filter(SearchFilter(organization)),
                top=min(limit, AUTOCOMPLETE_TOP),
            )
        terms = sorted({item.text for item in found if item.text and item.text.startswith(prefix)})
        return terms[:limit]

    async def aclose(self) -> None:
        """Close both clients (and the credential this engine created)."""
        try:
            await self._client.close()
            await self._indexes.close()
        finally:
            if self._owned_credential is not None:
                await self._owned_credential.close()
