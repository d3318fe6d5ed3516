"""The production search engine: Azure AI Search through ``azure.search.documents.aio``.

Why it looks like this:

- **One index, every organization in it, every query trimmed to one.** Each span is a search document with its
  scope fields (:mod:`orc.search.azure_schema`); every query's OData filter starts with
  ``organization eq '<caller's organization>'``, values quoted with their quotes doubled, so no scope value can
  widen a filter.
- **Orc's tokens, the service's BM25.** The retriever's weighted terms become a full-Lucene query on the
  whitespace-analyzed ``terms``/``title_terms`` fields (term boosts carry the weights), so the service scores the
  same token space the embedded engine scores. A hybrid request is the service's own: the text and a
  ``VectorizedQuery`` in one request, fused by the service with reciprocal rank fusion. With ``semantic`` on, a
  lexical or hybrid query is re-ranked by the service's semantic ranker over the span's text and section title.
- **No transactions, so versions.** A span's key holds its document's version: a replacement writes the new
  version's spans (merge-or-upload: the same upsert twice is one item), then the head item that says which version
  is current, then deletes the other versions' items. A search that meets a document half replaced may see both
  versions; every hit carries its version and the retriever keeps only the one the catalog holds current.
- **Retries.** The SDK's pipeline retries 408/429/5xx and dropped connections; an indexing batch whose items the
  service refused one by one (207, item status 409/422/429/503) is sent again, those items only, with backoff.
  Past the budget the engine raises :class:`~orc.errors.StorageUnavailable`. Messages carry status and error codes,
  never the endpoint or a key, and SDK exceptions (whose text may hold the URL) are not chained.
- **What the service has no call for.** Corpus statistics come from the head items (span and token counts) and
  one count query per term, both cached briefly (they steer ranking, never which spans are returned); the
  vocabulary comes from the index's suggester (``autocomplete``, at most 100 terms a call).
- **Near real time.** The service makes a write searchable within about a second, not at once: the next search
  in another process may miss a document indexed a moment ago (the retriever reads the stored text for a document
  whose entry it cannot see, so nothing is lost; it is indexed again).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
)

from orc.errors import ConfigurationError, StorageError, StorageUnavailable
from orc.resources import MissingResource
from orc.search.azure_schema import (
    DEFAULT_DIMENSIONS,
    FIELD_KEY,
    HEAD_FIELDS,
    HEAD_ORDINAL,
    SEMANTIC_CONFIGURATION,
    SPAN_FIELDS,
    SUGGESTER,
    document_filter,
    head_key,
    index_definition,
    lucene_query,
    odata_literal,
    phrase,
    schema_problems,
    scope_filter,
    span_key,
    vector_dimensions,
    words_of,
)
from orc.search.port import (
    IndexedDocument,
    IndexedEntry,
    IndexedSpan,
    SearchFilter,
    SearchRequest,
    SpanHit,
    TermStatistics,
)
from orc.storage.azure_blob import retry_after_seconds

if TYPE_CHECKING:
    from azure.core.credentials import AzureKeyCredential
    from azure.core.credentials_async import AsyncTokenCredential
    from azure.search.documents.aio import SearchClient
    from azure.search.documents.indexes.aio import SearchIndexClient

logger = logging.getLogger(__name__)

BATCH = 500
"""Index actions per request (the service takes up to 1,000 and 16 MB; the SDK halves a batch answered 413)."""
RETRYABLE_ITEM_STATUS = frozenset({409, 422, 429, 503})
"""Item statuses of an indexing batch worth sending again (a version conflict, a throttled or busy replica)."""
PAGE = 1000
"""Items per page when listing a document's items or an organization's heads (the service's largest ``top``)."""
SEMANTIC_WINDOW = 50
"""The semantic ranker re-ranks the first 50 results of the base query: a deeper ``top`` is not re-ranked."""
AUTOCOMPLETE_TOP = 100
"""The most terms one ``autocomplete`` call returns."""
COUNT_CONCURRENCY = 8
"""Term-count queries in flight at once for one statistics call."""
MAX_CACHED_TERMS = 50_000
"""Term counts a process keeps (all dropped when the table is full: they are cheap to ask again)."""


class AzureSearchEngine:
    """:class:`~orc.search.port.SearchEngine` on an Azure AI Search index; see the module docstring.

    Build it with :meth:`from_endpoint`, then :meth:`prepare` the index (check it, or create it where resources may
    be created) before the first call. ``retry_delay`` is the first backoff of a refused indexing item (doubled per
    attempt, ``attempts`` in all).
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
        attempts: int = 4,
        retry_delay: float = 0.5,
        statistics_seconds: float = 60.0,
    ) -> None:
        self._client = client
        self._indexes = index_client
        self._index_name = index_name
        self._semantic = semantic
        self._dimensions = dimensions
        self._owned_credential = owned_credential
        self._attempts = max(1, attempts)
        self._retry_delay = retry_delay
        self._statistics_seconds = statistics_seconds
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}
        self._corpus: dict[str, tuple[float, int, int]] = {}
        self._frequencies: dict[tuple[str, str], tuple[float, int]] = {}
        self._warned_dimensions = False

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
        connection_timeout_seconds: float = 10.0,
        read_timeout_seconds: float = 30.0,
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
            "connection_timeout": connection_timeout_seconds,
            "read_timeout": read_timeout_seconds,
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
        created) or :data:`~orc.search.azure_schema.DEFAULT_DIMENSIONS`; ``dimensions``, when given, is the size an
        existing index must have."""
        name = self.index_name
        async with _translated("the search index"):
            try:
                existing: dict[str, Any] | None = (await self._indexes.get_index(name)).as_dict()
            except ResourceNotFoundError:
                existing = None
        if existing is None:
            if not create:
                return [MissingResource("search index", name)]
            measured = await measure() if measure is not None and dimensions is None else None
            size = dimensions or measured or self._dimensions or DEFAULT_DIMENSIONS
            async with _translated("the search index"):
                await self._indexes.create_or_update_index(index_definition(name, size))
            self._dimensions = size
            return []
        problems = schema_problems(existing, dimensions)
        if problems and create and not any("dimensions" in problem for problem in problems):
            # Adding fields and a suggester to an index is allowed in place; changing a vector size is not.
            size = vector_dimensions(existing) or DEFAULT_DIMENSIONS
            async with _translated("the search index"):
                await self._indexes.create_or_update_index(index_definition(name, size))
                existing = (await self._indexes.get_index(name)).as_dict()
            problems = schema_problems(existing, dimensions)
        self._dimensions = vector_dimensions(existing)
        return [MissingResource("search index", name, "; ".join(problems))] if problems else []

    # -- writes ------------------------------------------------------------------------------------------------

    async def upsert(self, document: IndexedDocument) -> None:
        """Write the new version's spans, then its head, then delete every item of another version."""
        async with self._writing(document.organization, document.document_id):
            await self._index("merge_or_upload", self._items(document))
            await self._index("merge_or_upload", [self._head(document)])
            await self._delete_items(
                document_filter(document.organization, document.document_id)
                + f" and version ne {odata_literal(document.version)}"
            )
        self._forget(document.organization)

    async def delete(self, organization: str, document_id: str) -> None:
        """Delete the head first (the document is no longer indexed), then every span."""
        async with self._writing(organization, document_id):
            await self._index("delete", [{FIELD_KEY: head_key(organization, document_id)}])
            await self._delete_items(document_filter(organization, document_id))
        self._forget(organization)

    @contextlib.asynccontextmanager
    async def _writing(self, organization: str, document_id: str) -> AsyncIterator[None]:
        """One write of a document at a time in this process (its lock kept only while someone holds or awaits
        it, so the table does not grow with every document ever written)."""
        key = (organization, document_id)
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)

    def _items(self, document: IndexedDocument) -> list[dict[str, Any]]:
        vectors = document.vectors
        model = document.vector_model
        if vectors is not None and len(vectors) != len(document.spans):
            raise ValueError("vectors must hold one row per span")
        if vectors is not None and vectors and self._dimensions is not None and len(vectors[0]) != self._dimensions:
            if not self._warned_dimensions:
                logger.warning(
                    "span vectors have %d dimensions, the search index's vector field %d: indexed without vectors",
                    len(vectors[0]),
                    self._dimensions,
                )
                self._warned_dimensions = True
            vectors = None
        items = []
        for position, span in enumerate(document.spans):
            item = self._scope(document) | {
                FIELD_KEY: span_key(document.organization, document.document_id, document.version, span.ordinal),
                "ordinal": span.ordinal,
                "span_id": span.span_id,
                "page": span.page,
                "start": span.start,
                "end": span.end,
                "text": span.text,
                "section": span.section,
                "terms": " ".join(span.terms),
                "title_terms": " ".join(span.title_terms),
                "words": words_of(span.terms),
                "sentences": json.dumps([list(sentence) for sentence in span.sentences], separators=(",", ":")),
                "spans": None,
                "tokens": None,
            }
            if vectors is not None and model is not None:
                item["vector"] = [float(value) for value in vectors[position]]
                item["vector_model"] = model
            else:
                item["vector_model"] = None
            items.append(item)
        return items

    def _head(self, document: IndexedDocument) -> dict[str, Any]:
        with_vectors = document.vectors is not None and document.vector_model is not None
        if with_vectors and document.vectors and self._dimensions is not None:
            with_vectors = len(document.vectors[0]) == self._dimensions
        return self._scope(document) | {
            FIELD_KEY: head_key(document.organization, document.document_id),
            "ordinal": HEAD_ORDINAL,
            "spans": len(document.spans),
            "tokens": sum(len(span.terms) for span in document.spans),
            "vector_model": document.vector_model if with_vectors else None,
        }

    @staticmethod
    def _scope(document: IndexedDocument) -> dict[str, Any]:
        scope = document.scope
        return {
            "organization": document.organization,
            "owner": scope.owner,
            "folder": scope.folder,
            "usecase": scope.usecase,
            "session": scope.session,
            "document_id": document.document_id,
            "version": document.version,
        }

    async def _index(self, action: str, items: Sequence[dict[str, Any]]) -> None:
        """Send ``items`` in batches; items the service refused one by one are sent again, with backoff."""
        for start in range(0, len(items), BATCH):
            pending = list(items[start : start + BATCH])
            for attempt in range(self._attempts):
                async with _translated("the search index"):
                    if action == "delete":
                        results = await self._client.delete_documents(pending)
                    else:
                        results = await self._client.merge_or_upload_documents(pending)
                failed = {result.key: result for result in results if not result.succeeded}
                if not failed:
                    break
                fatal = [result for result in failed.values() if result.status_code not in RETRYABLE_ITEM_STATUS]
                if fatal:
                    # A refusal that will not change (a bad field, a key the service rejects): the schema or orc is
                    # wrong, and retrying cannot help.
                    raise StorageError(
                        f"the search index refused {len(fatal)} item(s) (status {fatal[0].status_code})"
                    ) from None
                if attempt + 1 == self._attempts:
                    status = next(iter(failed.values())).status_code
                    raise StorageUnavailable(
                        f"the search index kept refusing {len(failed)} item(s) (status {status}); retry later"
                    ) from None
                pending = [item for item in pending if item[FIELD_KEY] in failed]
                await asyncio.sleep(self._retry_delay * 2**attempt)

    async def _delete_items(self, where: str) -> None:
        """Delete every item ``where`` selects, a page at a time in key order (each page starts after the last key
        seen: the index is near real time, so a page just deleted may still be listed)."""
        last: str | None = None
        while True:
            page = where if last is None else f"{where} and {FIELD_KEY} gt {odata_literal(last)}"
            keys = [
                item[FIELD_KEY] for item in await self._rows(page, [FIELD_KEY], PAGE, order_by=[f"{FIELD_KEY} asc"])
            ]
            if keys:
                await self._index("delete", [{FIELD_KEY: key} for key in keys])
            if len(keys) < PAGE:
                return
            last = keys[-1]

    # -- reads -------------------------------------------------------------------------------------------------

    async def search(self, request: SearchRequest) -> list[SpanHit]:
        """Lexical, vector or the service's hybrid query inside the request's filter; semantic re-ranking of the
        lexical and hybrid ones when configured."""
        if request.limit < 1:
            return []
        text = lucene_query(request.terms, request.title_weight) if request.mode != "vector" else ""
        vector = request.vector if request.mode != "lexical" and request.vector_model else None
        if vector is not None and self._dimensions is not None and len(vector) != self._dimensions:
            vector = None
        if not text and vector is None:
            return []
        from azure.search.documents.models import VectorizedQuery

        where = scope_filter(request.filter)
        if vector is not None:
            assert request.vector_model is not None
            where += f" and vector_model eq {odata_literal(request.vector_model)}"
        options: dict[str, Any] = {"filter": where, "select": list(SPAN_FIELDS), "top": request.limit}
        if vector is not None:
            options["vector_queries"] = [
                VectorizedQuery(
                    vector=[float(value) for value in vector], k_nearest_neighbors=request.limit, fields="vector"
                )
            ]
        semantic = self._semantic and bool(text)
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
        async with _translated("the search index"):
            rows = [row async for row in await self._client.search(text or None, **options)]
        hits = [_hit(row, semantic=semantic, vector_only=not text) for row in rows]
        if not text:
            hits.sort(key=lambda hit: (-hit.score, hit.document_id, hit.span.ordinal))
        return hits[: request.limit]

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
        rows = await self._rows(where, list(SPAN_FIELDS), len(wanted), order_by=["ordinal asc"])
        hits = [dataclasses.replace(_hit(row, semantic=False, vector_only=False), score=0.0) for row in rows]
        return sorted(hits, key=lambda hit: hit.span.ordinal)

    async def entries(self, organization: str, document_ids: Sequence[str]) -> dict[str, IndexedEntry]:
        """The head items of ``document_ids``."""
        found: dict[str, IndexedEntry] = {}
        ids = list(dict.fromkeys(document_ids))
        for start in range(0, len(ids), PAGE):
            chunk = ids[start : start + PAGE]
            where = scope_filter(SearchFilter(organization, documents=frozenset(chunk)), heads=True)
            for row in await self._rows(where, list(HEAD_FIELDS), len(chunk)):
                found[row["document_id"]] = IndexedEntry(
                    version=row["version"], spans=int(row.get("spans") or 0), vector_model=row.get("vector_model")
                )
        return found

    async def statistics(self, organization: str, terms: Sequence[str]) -> TermStatistics:
        """Span and token counts from the heads, and one count query per term (both cached briefly)."""
        spans, tokens = await self._corpus_size(organization)
        asked = list(dict.fromkeys(term for term in terms if term))
        counts = await self._term_counts(organization, asked) if spans else {}
        return TermStatistics(
            spans=spans,
            average_length=tokens / spans if spans else 0.0,
            frequencies={term: count for term, count in counts.items() if count > 0},
        )

    async def vocabulary(self, organization: str, prefix: str, limit: int) -> list[str]:
        """Terms that start with ``prefix``, from the index's suggester (at most 100 a call), in term order."""
        if limit < 1 or not prefix:
            return []
        async with _translated("the search index"):
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

    # -- helpers -----------------------------------------------------------------------------------------------

    async def _rows(
        self, where: str, select: list[str], top: int, *, order_by: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """The items ``where`` selects (no text query), ``top`` at most."""
        async with _translated("the search index"):
            pages = await self._client.search(
                None, filter=where, select=select, top=max(1, min(top, PAGE)), order_by=order_by
            )
            return [dict(row) async for row in pages]

    async def _corpus_size(self, organization: str) -> tuple[int, int]:
        cached = self._corpus.get(organization)
        now = time.monotonic()
        if cached is not None and now - cached[0] < self._statistics_seconds:
            return cached[1], cached[2]
        spans = tokens = 0
        where = scope_filter(SearchFilter(organization), heads=True)
        last: str | None = None
        while True:
            # Paged by document id (``$skip`` stops at 100,000): each page starts after the last id seen.
            page_filter = where if last is None else f"{where} and document_id gt {odata_literal(last)}"
            rows = await self._rows(page_filter, ["document_id", "spans", "tokens"], PAGE, order_by=["document_id asc"])
            for row in rows:
                spans += int(row.get("spans") or 0)
                tokens += int(row.get("tokens") or 0)
            if len(rows) < PAGE:
                break
            last = rows[-1]["document_id"]
        self._corpus[organization] = (now, spans, tokens)
        return spans, tokens

    async def _term_counts(self, organization: str, terms: Sequence[str]) -> dict[str, int]:
        now = time.monotonic()
        counts: dict[str, int] = {}
        missing = []
        for term in terms:
            cached = self._frequencies.get((organization, term))
            if cached is not None and now - cached[0] < self._statistics_seconds:
                counts[term] = cached[1]
            else:
                missing.append(term)
        gate = asyncio.Semaphore(COUNT_CONCURRENCY)
        where = scope_filter(SearchFilter(organization))

        async def count(term: str) -> None:
            async with gate, _translated("the search index"):
                found = await self._client.search(
                    phrase(term),
                    query_type="simple",
                    search_fields=["terms"],
                    filter=where,
                    include_total_count=True,
                    top=0,
                )
                counts[term] = int(await found.get_count() or 0)
            if len(self._frequencies) >= MAX_CACHED_TERMS:
                self._frequencies.clear()
            self._frequencies[(organization, term)] = (now, counts[term])

        await asyncio.gather(*(count(term) for term in missing))
        return counts

    def _forget(self, organization: str) -> None:
        """Drop ``organization``'s cached statistics after a write of this process."""
        self._corpus.pop(organization, None)
        for key in [key for key in self._frequencies if key[0] == organization]:
            del self._frequencies[key]


def _hit(row: Mapping[str, Any], *, semantic: bool, vector_only: bool) -> SpanHit:
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


@contextlib.asynccontextmanager
async def _translated(what: str) -> AsyncIterator[None]:
    """SDK errors as orc's, with status and error code only, never chained (their text may hold the endpoint)."""
    try:
        yield
    except ClientAuthenticationError:
        raise ConfigurationError(
            "Azure AI Search refused the credentials; check ORC_SEARCH_KEY or the identity's Search Index Data "
            "Contributor role"
        ) from None
    except HttpResponseError as error:
        status = int(error.status_code or 0)
        error_code = getattr(error, "error_code", None)
        code = f", {error_code}" if error_code and str(error_code).replace("_", "").isalnum() else ""
        if status in (401, 403):
            raise ConfigurationError(f"Azure AI Search refused the credentials (status {status}{code})") from None
        if status == 404:
            raise ConfigurationError(f"{what} does not exist (status 404); run orc doctor") from None
        if status in (408, 429) or status >= 500:
            raise StorageUnavailable(
                f"Azure AI Search failed (status {status}{code}); retry later", retry_after=retry_after_seconds(error)
            ) from None
        raise StorageError(f"Azure AI Search refused the request (status {status}{code})") from None
    except AzureError as error:
        raise StorageUnavailable(f"Azure AI Search is unreachable ({type(error).__name__}); retry later") from None
