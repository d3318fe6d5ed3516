"""The search port: what every search engine does for orc, and the contract it keeps.

An engine holds the spans of an organization's documents, each with its scope fields, and answers lexical,
vector and hybrid queries trimmed to a filter. It is a derived index: the stored text (:mod:`orc.search.text_store`)
and span vectors stay the truth, so an index can always be rebuilt from them, and a document is (re)indexed when
it is processed, replaced or deleted. Engines are dumb on purpose: the query's terms come already tokenized and
weighted (orc's one tokenizer, :mod:`orc.text.tokens`), the span text comes already tokenized too, and ranking
beyond BM25 and cosine similarity is the retriever's (:mod:`orc.search.retriever`), so every engine ranks the same
token space the same way. The conformance suite (:mod:`orc.testing.conformance.search`) holds every engine to this
contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

SearchMode = Literal["lexical", "vector", "hybrid"]


@dataclass(frozen=True, slots=True)
class ScopeFields:
    """Where a document sits, so a filter can select it.

    ``owner`` is the context that holds it: ``organization:<id>``, ``folder:<id>``, ``usecase:<id>`` or
    ``session:<user>/<conversation>`` (:func:`owner_key`). ``folder`` and ``usecase`` name the context it is
    under, when it is under one.
    """

    organization: str
    owner: str
    folder: str | None = None
    usecase: str | None = None
    session: str | None = None


def owner_key(kind: str, context_id: str) -> str:
    """The ``owner`` of a document held by a context (``kind`` ``organization``/``folder``/``usecase``) or by a
    session (``kind`` ``session``, ``context_id`` ``<user>/<conversation>``)."""
    return f"{kind}:{context_id}"


@dataclass(frozen=True, slots=True)
class IndexedSpan:
    """One span as an engine holds it: its place, its text, and its tokens (:func:`orc.text.tokenize`)."""

    ordinal: int
    """0-based position of the span in its document (``S<ordinal + 1>`` for spans cut by orc)."""
    span_id: str
    page: int | None
    start: int
    end: int
    """Offsets of the span in the document's text (:meth:`orc.search.text_store.DocumentText.span_offsets`)."""
    text: str
    section: str | None
    terms: Sequence[str]
    """The span's text, tokenized."""
    title_terms: Sequence[str] = ()
    """Its section's title path, tokenized (scored as a field of its own)."""
    sentences: Sequence[Sequence[str]] = ()
    """The span's sentences, each tokenized: the retriever's sentence-level re-rank reads them, so a search never
    tokenizes what was tokenized when the span was indexed."""


@dataclass(frozen=True, slots=True)
class IndexedDocument:
    """A document's whole entry: replacing it replaces every span at once."""

    organization: str
    document_id: str
    version: str
    """What the entry was made from (:func:`index_version`): a search keeps only hits of the version its caller
    holds current."""
    scope: ScopeFields
    spans: Sequence[IndexedSpan]
    vectors: Sequence[Sequence[float]] | None = None
    """One unit row per span, or ``None`` (lexical only)."""
    vector_model: str | None = None
    """Which embedding model (and recipe) made ``vectors``: a vector query names the model it was embedded with."""


def index_version(extracted_text_hash: str, chunking_version: str) -> str:
    """The version of a document's index entry: its text and how it was cut."""
    return f"{extracted_text_hash}:{chunking_version}"


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Which spans a query may return: always one organization's, then (when given) only those of the listed
    owners and documents. An empty set matches nothing."""

    organization: str
    owners: frozenset[str] | None = None
    documents: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A query. ``terms`` maps tokens to their weight (a BM25 term score is multiplied by it); ``vector`` is the
    query's unit embedding made by ``vector_model``. ``mode`` picks the legs: ``hybrid`` fuses them (reciprocal
    rank fusion), a leg with nothing to search with (no terms, no vector) is skipped."""

    filter: SearchFilter
    limit: int
    terms: Mapping[str, float] = field(default_factory=dict)
    vector: Sequence[float] | None = None
    vector_model: str | None = None
    mode: SearchMode = "lexical"
    title_weight: float = 1.0
    """A title match counts for this share of a text match of the same term."""
    text: str | None = None
    """The query as its asker wrote it, for an engine with a language-aware re-ranker (Azure AI Search's semantic
    ranker); engines that rank tokens only ignore it."""


@dataclass(frozen=True, slots=True)
class SpanHit:
    """A span found: which document (and version), which span, its text and locators, and its score (BM25 for a
    lexical query, cosine similarity for a vector query, the RRF score for a hybrid one). The span comes back with
    its ``sentences`` as indexed; ``terms`` and ``title_terms`` may be left out (empty)."""

    document_id: str
    version: str
    span: IndexedSpan
    score: float


@dataclass(frozen=True, slots=True)
class TermStatistics:
    """Corpus statistics of an organization's spans: how many there are, their average length in tokens, and in
    how many of them each asked term occurs (a term no span holds is absent)."""

    spans: int
    average_length: float
    frequencies: dict[str, int]


@dataclass(frozen=True, slots=True)
class IndexedEntry:
    """What an engine holds of a document: its version, span count and the model of its vectors (``None``:
    none)."""

    version: str
    spans: int
    vector_model: str | None


class SearchEngine(Protocol):
    """A search index of span text and vectors, filtered by organization and scope.

    Contract (proven by :class:`orc.testing.conformance.SearchConformance`):

    - :meth:`upsert` replaces a document's whole entry atomically — a search sees the old spans or the new ones,
      never a mix — and is idempotent; once it returns, every search by every process sharing the engine sees it.
    - :meth:`delete` removes a document's entry; deleting a missing one is no error.
    - :meth:`search` returns at most ``limit`` hits, best first, every one inside the filter — never a span of
      another organization, owner or document; ties are broken by document id, then ordinal. Lexical scores are
      BM25 over the matching fields (the text and, at ``title_weight``, the section title); a term no span holds
      contributes nothing; a query with no term matches nothing. Vector hits come only from documents whose
      vectors were made by the query's ``vector_model``. A hybrid query's lexical leg still finds, by their terms,
      the spans of documents indexed without vectors; it may leave out those of documents whose vectors another
      model made (Azure AI Search applies one filter to both legs).
    - :attr:`native_hybrid` says whether the engine's own hybrid ranking (terms, text and vector in one request,
      fused by the engine and re-ranked by its language-aware ranker where it has one) is the one to use: the
      retriever then sends such an engine one hybrid request per retrieval, and otherwise asks for each leg apart
      and fuses them with its own re-ranking.
    - :meth:`spans` returns the spans at the given ordinals of a document (the neighbours of a hit), in ordinal
      order, skipping ordinals it does not have; nothing for an unknown document.
    - :meth:`entries` says which of the given documents are indexed, and at which version.
    - :meth:`statistics` says how many spans the organization has, their average length, and in how many of
      them each term occurs (for idf and for query expansion); a term no span holds is absent from the answer.
      Frequencies and :meth:`vocabulary` may still count spans replaced or deleted a moment ago, until the engine
      compacts them away (as Lucene-style engines do): they steer ranking, never which spans are returned.
    - :meth:`vocabulary` lists terms the organization's spans hold that start with a prefix (for a query whose
      words the documents spell otherwise), in term order.
    - Concurrency: any number of searches may run while one upsert or delete runs; calls are safe from any task.
    """

    @property
    def native_hybrid(self) -> bool:
        """Whether a hybrid query is best answered by the engine's own ranking (one request) rather than by the
        retriever fusing a lexical and a vector request."""
        ...

    async def upsert(self, document: IndexedDocument) -> None:
        """Index ``document``, replacing whatever its organization held under its id."""
        ...

    async def delete(self, organization: str, document_id: str) -> None:
        """Remove ``document_id``'s entry from ``organization`` (no error when there is none)."""
        ...

    async def search(self, request: SearchRequest) -> list[SpanHit]:
        """The best spans for ``request`` inside its filter."""
        ...

    async def spans(self, organization: str, document_id: str, ordinals: Sequence[int]) -> list[SpanHit]:
        """The spans of ``document_id`` at ``ordinals`` (score 0), in ordinal order."""
        ...

    async def entries(self, organization: str, document_ids: Sequence[str]) -> dict[str, IndexedEntry]:
        """The indexed entry of each of ``document_ids`` that has one."""
        ...

    async def statistics(self, organization: str, terms: Sequence[str]) -> TermStatistics:
        """Span count, average span length and the span frequency of each of ``terms`` in ``organization``."""
        ...

    async def vocabulary(self, organization: str, prefix: str, limit: int) -> list[str]:
        """At most ``limit`` terms of ``organization``'s spans that start with ``prefix``, in term order."""
        ...

    async def aclose(self) -> None:
        """Release what the engine holds (files, connections); the index stays where it is."""
        ...
