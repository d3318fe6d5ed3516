"""Writing spans to Azure AI Search: a document's items (one per span, keyed by version, and its head), sent in
batches whose refused items are sent again with backoff, and the deletion of every item a filter selects. The
service has no transactions, so a replacement writes the new version, then the head that makes it current, then
deletes the other versions' items (:mod:`orc.search.azure.engine` says why)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from orc.errors import StorageError, StorageUnavailable
from orc.search.azure.errors import translated
from orc.search.azure.queries import PAGE, rows
from orc.search.azure.schema import (
    FIELD_KEY,
    HEAD_ORDINAL,
    document_filter,
    head_key,
    odata_literal,
    span_key,
    words_of,
)
from orc.search.port import IndexedDocument

if TYPE_CHECKING:
    from azure.search.documents.aio import SearchClient

logger = logging.getLogger(__name__)

BATCH = 500
"""Index actions per request (the service takes up to 1,000 and 16 MB; the SDK halves a batch answered 413)."""
ATTEMPTS = 4
"""Tries of one refused indexing item."""
RETRYABLE_ITEM_STATUS = frozenset({409, 422, 429, 503})
"""Item statuses of an indexing batch worth sending again (a version conflict, a throttled or busy replica)."""


class SpanWriter:
    """Upserts and deletes of documents' items through ``client``; ``retry_delay`` is the first backoff of a
    refused item (doubled per attempt, :data:`ATTEMPTS` in all)."""

    def __init__(self, client: SearchClient, *, retry_delay: float) -> None:
        self._client = client
        self._retry_delay = retry_delay
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}
        self._warned_dimensions = False

    async def upsert(self, document: IndexedDocument, dimensions: int | None) -> None:
        """Write the new version's spans (vectors only when they have the index's ``dimensions``), then its head,
        then delete every item of another version."""
        async with self._writing(document.organization, document.document_id):
            await self._index("merge_or_upload", self._items(document, dimensions))
            await self._index("merge_or_upload", [self._head(document, dimensions)])
            await self.delete_items(
                document_filter(document.organization, document.document_id)
                + f" and version ne {odata_literal(document.version)}"
            )

    async def delete(self, organization: str, document_id: str) -> None:
        """Delete the head first (the document is no longer indexed), then every span."""
        async with self._writing(organization, document_id):
            await self._index("delete", [{FIELD_KEY: head_key(organization, document_id)}])
            await self.delete_items(document_filter(organization, document_id))

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

    def _items(self, document: IndexedDocument, dimensions: int | None) -> list[dict[str, Any]]:
        vectors = document.vectors
        model = document.vector_model
        if vectors is not None and len(vectors) != len(document.spans):
            raise ValueError("vectors must hold one row per span")
        if vectors is not None and vectors and dimensions is not None and len(vectors[0]) != dimensions:
            if not self._warned_dimensions:
                logger.warning(
                    "span vectors have %d dimensions, the search index's vector field %d: indexed without vectors",
                    len(vectors[0]),
                    dimensions,
                )
                self._warned_dimensions = True
            vectors = None
        items = []
        for position, span in enumerate(document.spans):
            item = _scope(document) | {
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

    @staticmethod
    def _head(document: IndexedDocument, dimensions: int | None) -> dict[str, Any]:
        with_vectors = document.vectors is not None and document.vector_model is not None
        if with_vectors and document.vectors and dimensions is not None:
            with_vectors = len(document.vectors[0]) == dimensions
        return _scope(document) | {
            FIELD_KEY: head_key(document.organization, document.document_id),
            "ordinal": HEAD_ORDINAL,
            "spans": len(document.spans),
            "tokens": sum(len(span.terms) for span in document.spans),
            "vector_model": document.vector_model if with_vectors else None,
        }

    async def _index(self, action: str, items: Sequence[dict[str, Any]]) -> None:
        """Send ``items`` in batches; items the service refused one by one are sent again, with backoff."""
        for start in range(0, len(items), BATCH):
            pending = list(items[start : start + BATCH])
            for attempt in range(ATTEMPTS):
                async with translated("the search index"):
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
                if attempt + 1 == ATTEMPTS:
                    status = next(iter(failed.values())).status_code
                    raise StorageUnavailable(
                        f"the search index kept refusing {len(failed)} item(s) (status {status}); retry later"
                    ) from None
                pending = [item for item in pending if item[FIELD_KEY] in failed]
                await asyncio.sleep(self._retry_delay * 2**attempt)

    async def delete_items(self, where: str) -> None:
        """Delete every item ``where`` selects, a page at a time in key order (each page starts after the last key
        seen: the index is near real time, so a page just deleted may still be listed)."""
        last: str | None = None
        while True:
            page = where if last is None else f"{where} and {FIELD_KEY} gt {odata_literal(last)}"
            keys = [
                item[FIELD_KEY]
                for item in await rows(self._client, page, [FIELD_KEY], PAGE, order_by=[f"{FIELD_KEY} asc"])
            ]
            if keys:
                await self._index("delete", [{FIELD_KEY: key} for key in keys])
            if len(keys) < PAGE:
                return
            last = keys[-1]


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
