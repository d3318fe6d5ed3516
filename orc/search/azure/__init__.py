"""The production search engine: Azure AI Search through ``azure.search.documents.aio``.

Why it looks like this:

- **One index, every organization in it, every query trimmed to one.** Each span is a search document with its
  scope fields (:mod:`orc.search.azure.schema`); every query's OData filter starts with
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

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orc.search.azure.engine import AzureSearchEngine

__all__ = ["AzureSearchEngine"]


def __getattr__(name: str) -> object:
    # The engine (and the search SDK) load on first use: ``orc doctor`` and ``python -m orc.search.azure.schema``
    # read the schema module without them.
    if name == "AzureSearchEngine":
        from orc.search.azure.engine import AzureSearchEngine

        return AzureSearchEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
