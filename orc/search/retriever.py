"""The one retriever: every path that ranks spans — turns, ``document_chat``, ``documents.search``, supply and the
handoff — asks it, and it asks the search engine (:mod:`orc.search.port`).

A caller says what to search with (the query text) and where (:class:`Target`: the documents, each at the version
its catalog record holds current, with the name its SourceRefs use); it gets ranked spans back
(:class:`RankedSpan`), and can fetch a hit's neighbours (:meth:`Retriever.spans`). The steps:

1. **Freshness.** The engine says which version of each document it holds. A document it lacks, or holds at
   another version (stored before the engine existed, a crash between two writes), is indexed from its stored
   text now — a few at once, the rest in the background, reported as ``indexing`` — so an index never has to be
   rebuilt by hand and a hit is never a span of a version the caller does not hold (hits of other versions are
   dropped).
2. **Lexical leg**, made to survive paraphrase (each step cheap and deterministic): the query's own terms
   (:func:`orc.text.tokenize`), a follow-up's ``(context: …)`` words at a lower weight, WordNet-related terms for a
   word no span uses; BM25 over span text and section titles by the engine; then, over the first candidates,
   pseudo-relevance feedback (terms the best spans share) and a sentence-level re-rank (a span whose matching
   words sit in one sentence beats one whose words are spread). When the query's words are not in the documents,
   one more round with the documents' own spellings of them (``rounds`` 2).
3. **Vector leg**, with embeddings: the query's vector (one request per retrieval, started by the caller before it
   reads anything, :meth:`Retriever.embed_query`) against the span vectors, fused with the lexical ranking by
   reciprocal rank fusion. A failed or slow embedding leaves the lexical ranking alone, said in
   ``metadata.retrieval``; a turn never fails for its vector leg.

Text that is not stored (a blob ``document_chat`` extracted on the fly) is ranked the same way by an in-memory
engine for the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import math
import time
from collections import Counter, OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orc.contracts import RetrievalLegs
from orc.search.fusion import LEXICAL_ONLY, reciprocal_rank_fusion
from orc.search.indexing import indexed_document
from orc.search.memory import MemorySearchEngine
from orc.search.port import (
    IndexedEntry,
    IndexedSpan,
    ScopeFields,
    SearchEngine,
    SearchFilter,
    SearchRequest,
    SpanHit,
    index_version,
)
from orc.search.spans import source_ref
from orc.search.text_store import DocumentText, TextStore, VectorLocation
from orc.text import split_sentences, tokenize
from orc.text.bm25 import K1, B
from orc.text.lexical import split_context
from orc.text.related import related_terms

if TYPE_CHECKING:  # numpy and the embedding clients load only where vectors are made
    from orc.search.vectors import Matrix, SpanVectors

logger = logging.getLogger(__name__)

TITLE_WEIGHT = 1.0
"""A title match counts for this share of a text match of the same term."""
CONTEXT_WEIGHT = 0.5
"""Weight of a term of a follow-up's ``(context: …)`` suffix: it says what the question is about, not what it asks."""
RELATED_WEIGHT = 0.2
"""Weight of a term WordNet relates to a query term that no span uses."""
FEEDBACK_SPANS = 4
"""Best spans of the first pass that the feedback terms are taken from."""
FEEDBACK_TERMS = 6
FEEDBACK_WEIGHT = 0.25
RERANK_DEPTH = 24
"""Candidates the feedback and the sentence-level re-rank may reorder (at least twice the limit)."""
RERANK_WEIGHT = 1.5
"""Weight of the best sentence window's coverage (0..1) against the candidate's score scaled to 0..1."""
NEIGHBOUR_CREDIT = 0.5
"""A query term found in the next or previous sentence counts for this share in a sentence window."""
FUSION_DEPTH = 3
"""Each leg ranks this many times the requested results before fusion, so a span ranked well by one leg only can
still make the cut."""
DOCUMENT_FILTER_LIMIT = 1000
"""Up to this many documents, the engine is asked for exactly them; beyond, for their owners (contexts), and the
hits of other documents are dropped here."""
INLINE_INDEXING = 8
"""Documents a retrieval indexes itself before it searches; more are indexed in the background."""
PREFIX = 5
"""Letters a vocabulary term must share with an unknown query term to stand in for it."""
CLOSE_SPELLING = 0.8
MAX_ALTERNATIVES = 3
VOCABULARY_LIMIT = 20_000
UNSTORED_DOCUMENTS = 200
"""Unstored texts (blobs document_chat extracted itself) a retriever keeps tokenized between questions."""
RETRY_AFTER_SECONDS = 60.0
"""How long a document whose background indexing or embedding failed waits before a search tries it again."""


@dataclass(frozen=True, slots=True)
class Target:
    """A document a retrieval may return spans of.

    ``version`` is what the caller holds current (:func:`~orc.search.port.index_version` of its record); hits of
    any other version are dropped. ``stored`` says where its text is stored, so the retriever can index it when
    the engine lacks it; ``text`` is a text that is not stored at all (ranked in memory for the call).
    """

    document_id: str
    name: str
    """The document's name in SourceRefs (``<name>::<span_id>``)."""
    version: str
    scope: ScopeFields
    weight: float = 1.0
    """Scores are multiplied by it (historical documents rank below the focus context at equal relevance)."""
    stored: VectorLocation | None = None
    text: DocumentText | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class RankedSpan:
    """A span found for a query: its document, the span and its score (higher is better)."""

    target: Target
    span: IndexedSpan
    score: float

    @property
    def ref(self) -> str:
        """The span's SourceRef."""
        return source_ref(self.target.name, self.span.span_id)


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What a retrieval found, and how."""

    spans: list[RankedSpan]
    legs: RetrievalLegs
    rounds: int = 1
    """2 when the query's words were not in the documents and it was retrieved again with their spellings."""
    indexing: list[Target] = field(default_factory=list)
    """Documents not searched because they are being indexed now (in the background)."""
    unreadable: list[Target] = field(default_factory=list)
    """Documents not searched because their stored text could not be read (they need processing again)."""


@dataclass(slots=True)
class _Candidate:
    hit: SpanHit
    target: Target
    score: float
    tokens: list[str] | None = None
    sentences: list[frozenset[str]] | None = None

    def tokenized(self) -> None:
        if self.tokens is not None:
            return
        stored = self.hit.span.sentences
        if stored:  # as indexed: nothing to tokenize
            self.sentences = [frozenset(sentence) for sentence in stored]
            self.tokens = [term for sentence in stored for term in sentence]
            return
        text = self.hit.span.text
        self.tokens = tokenize(text)
        self.sentences = [frozenset(terms) for sentence in split_sentences(text) if (terms := tokenize(sentence))]


@dataclass(frozen=True, slots=True)
class _Query:
    own: list[str]
    weights: dict[str, float]
    unknown: list[str]
    spans: int
    average_length: float
    frequencies: dict[str, int]
    text: str | None = None
    """The question as asked, for an engine's language-aware re-ranker (Azure AI Search's semantic ranker)."""


class Retriever:
    """Ranks spans of stored and unstored documents through one :class:`~orc.search.port.SearchEngine`.

    ``texts`` is where a document's stored text is read when the engine lacks it; ``vectors`` (with embeddings)
    embeds queries, and the spans of documents the engine holds without vectors (in the background). Close it to
    stop background work.
    """

    def __init__(
        self,
        engine: SearchEngine,
        texts: TextStore | None = None,
        vectors: SpanVectors | None = None,
        *,
        inline_indexing: int = INLINE_INDEXING,
        max_background: int = 2,
    ) -> None:
        self._engine = engine
        self._texts = texts
        self._vectors = vectors
        self._inline = inline_indexing
        self._healing: dict[tuple[str, str, str], asyncio.Task[bool]] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._scheduled: set[tuple[str, str, str]] = set()
        self._failed: dict[tuple[str, str, str], float] = {}
        self._slots = asyncio.Semaphore(max_background)
        self._unstored = MemorySearchEngine()
        self._unstored_order: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._closed = False

    @property
    def engine(self) -> SearchEngine:
        """The search engine behind the retriever."""
        return self._engine

    @property
    def vectors(self) -> SpanVectors | None:
        """The span vectors' model and store, with embeddings on."""
        return self._vectors

    # -- indexing ----------------------------------------------------------------------------------------------

    async def index(
        self,
        text: DocumentText,
        *,
        document_id: str,
        scope: ScopeFields,
        vectors: Matrix | None = None,
    ) -> None:
        """Index ``text`` as ``document_id`` (replacing its entry), with its span vectors when given."""
        model = self._vectors.store_key if self._vectors is not None and vectors is not None else None
        rows = vectors.tolist() if vectors is not None and model is not None else None
        document = await asyncio.to_thread(
            indexed_document, text, document_id=document_id, scope=scope, vectors=rows, vector_model=model
        )
        await self._engine.upsert(document)

    async def remove(self, organization: str, document_id: str) -> None:
        """Drop ``document_id`` from the index."""
        await self._engine.delete(organization, document_id)

    # -- retrieval ---------------------------------------------------------------------------------------------

    def embed_query(self, query: str) -> asyncio.Task[Matrix] | None:
        """Start embedding ``query`` now (None without embeddings); hand the task to :meth:`retrieve`. A task its
        caller abandons ends by itself within the query timeout, unobserved."""
        if self._vectors is None:
            return None
        task = asyncio.create_task(self._vectors.embed_query(query), name="embed-query")
        task.add_done_callback(_observed)
        return task

    async def retrieve(
        self,
        query: str,
        organization: str,
        targets: Sequence[Target],
        *,
        limit: int,
        query_vector: asyncio.Task[Matrix] | None = None,
        first_spans: bool = False,
    ) -> Retrieval:
        """The ``limit`` best spans of ``targets`` for ``query`` (all of ``organization``).

        ``query_vector`` is :meth:`embed_query`'s task (cancelled here if the retrieval fails). ``first_spans``:
        when nothing matches, return the first spans of each document in turn, so a model can still say it did
        not find the answer (document_chat does).
        """
        try:
            return await self._retrieve(query, organization, targets, limit, query_vector, first_spans)
        except BaseException:
            if query_vector is not None:
                query_vector.cancel()
            raise

    async def _retrieve(
        self,
        query: str,
        organization: str,
        targets: Sequence[Target],
        limit: int,
        query_vector: asyncio.Task[Matrix] | None,
        first_spans: bool,
    ) -> Retrieval:
        if limit < 1:
            raise ValueError("limit must be positive")
        for target in targets:
            if target.scope.organization != organization:
                raise ValueError("every target must belong to the searched organization")
        transient = [target for target in targets if target.text is not None]
        stored = [target for target in targets if target.text is None]
        entries: dict[str, IndexedEntry] = {}
        indexing: list[Target] = []
        unreadable: list[Target] = []
        prepared: _Query | None = None
        if stored:
            # The engine's entries and the query's statistics are read together: one wait, not two.
            (entries, searchable, indexing, unreadable), prepared = await asyncio.gather(
                self._fresh(organization, stored), _prepare(self._engine, organization, query)
            )
            stored = searchable
        depth = limit * FUSION_DEPTH if self._vectors is not None else limit
        pool = max(depth, RERANK_DEPTH)
        rankings: list[list[RankedSpan]] = []
        rounds = 1
        if stored:
            ranked, rounds = await self._lexical(self._engine, organization, stored, query, pool, prepared)
            rankings.append(ranked)
        if transient:
            await self._hold(organization, transient)
            ranked, again = await self._lexical(self._unstored, organization, transient, query, pool)
            rankings.append(ranked)
            rounds = max(rounds, again)
        lexical = _fused(rankings, pool) if len(rankings) > 1 else (rankings[0] if rankings else [])

        legs = LEXICAL_ONLY
        vector_hits: list[RankedSpan] = []
        if self._vectors is not None:
            model = self._vectors.store_key
            without = [
                target
                for target in stored
                if (entry := entries.get(target.document_id)) is None or entry.vector_model != model
            ]
            for target in without:
                self._schedule_vectors(target)
            waiting = [target.name for target in [*without, *transient]]
            names = [target.name for target in [*stored, *transient]]
            vector_hits, error = await self._vector(organization, stored, query_vector, depth, model)
            if error is not None or (not vector_hits and len(waiting) == len(names)):
                legs = RetrievalLegs(
                    legs=["lexical"], embeddings=self._vectors.label, lexical_only=waiting, vector_error=error
                )
            else:
                legs = RetrievalLegs(
                    legs=["lexical", "vector"], fusion="rrf", embeddings=self._vectors.label, lexical_only=waiting
                )
        elif query_vector is not None:
            query_vector.cancel()

        spans = _fused([lexical, vector_hits], limit) if vector_hits else lexical[:limit]
        if not spans and first_spans:
            spans = await self._first_spans(organization, [*stored, *transient], limit)
        return Retrieval(spans=spans, legs=legs, rounds=rounds, indexing=indexing, unreadable=unreadable)

    async def spans(self, target: Target, ordinals: Sequence[int]) -> list[RankedSpan]:
        """The spans of ``target`` at ``ordinals`` (a hit's neighbours), in order; score 0."""
        engine = self._engine
        if target.text is not None:
            await self._hold(target.scope.organization, [target])
            engine = self._unstored
        found = await engine.spans(target.scope.organization, target.document_id, ordinals)
        return [RankedSpan(target, hit.span, 0.0) for hit in found if hit.version == target.version]

    async def _hold(self, organization: str, targets: Sequence[Target]) -> None:
        """Put unstored texts in the in-memory engine, tokenized once: a later question about the same text (a
        document_chat follow-up) only ranks them. The least recently held go past :data:`UNSTORED_DOCUMENTS`."""
        held = await self._unstored.entries(organization, [target.document_id for target in targets])
        for target in targets:
            key = (organization, target.document_id)
            self._unstored_order.pop(key, None)
            self._unstored_order[key] = None
            entry = held.get(target.document_id)
            if entry is not None and entry.version == target.version:
                continue
            assert target.text is not None
            document = await asyncio.to_thread(
                indexed_document, target.text, document_id=target.document_id, scope=target.scope
            )
            await self._unstored.upsert(document)
        while len(self._unstored_order) > UNSTORED_DOCUMENTS:
            (old_organization, old_document), _ = self._unstored_order.popitem(last=False)
            await self._unstored.delete(old_organization, old_document)

    # -- freshness ---------------------------------------------------------------------------------------------

    async def _fresh(
        self, organization: str, targets: Sequence[Target]
    ) -> tuple[dict[str, IndexedEntry], list[Target], list[Target], list[Target]]:
        """The engine's entries, and the targets split into searchable, being indexed and unreadable."""
        entries = await self._engine.entries(organization, [target.document_id for target in targets])
        stale = [
            target
            for target in targets
            if (entry := entries.get(target.document_id)) is None or entry.version != target.version
        ]
        if not stale:
            return entries, list(targets), [], []
        now, later = stale[: self._inline], stale[self._inline :]
        healed = await asyncio.gather(*(self._heal(target) for target in now))
        for target in later:
            self._schedule_heal(target)
        failed = {target.document_id for target, ok in zip(now, healed, strict=True) if not ok}
        waiting = {target.document_id for target in later}
        if any(healed):
            entries = await self._engine.entries(organization, [target.document_id for target in targets])
        searchable = [
            target for target in targets if target.document_id not in failed and target.document_id not in waiting
        ]
        return (
            entries,
            searchable,
            [target for target in later],
            [target for target in now if target.document_id in failed],
        )

    def _heal(self, target: Target) -> asyncio.Task[bool]:
        key = (target.scope.organization, target.document_id, target.version)
        running = self._healing.get(key)
        if running is None:
            running = asyncio.create_task(self._index_stored(target), name=f"index-{target.document_id}")
            self._healing[key] = running
            running.add_done_callback(lambda _: self._healing.pop(key, None))
        return running

    async def _index_stored(self, target: Target) -> bool:
        """Index ``target`` from its stored text (and stored vectors); False when the text cannot be read."""
        if target.stored is None or self._texts is None:
            return False
        location = target.stored
        text = await self._texts.load(location.partition_key, location.document_id, location.content_hash)
        if text is None or index_version(text.extracted_text_hash, text.chunking_version) != target.version:
            return False
        matrix = None
        if self._vectors is not None:
            matrix = await self._vectors.load(text, location)
        await self.index(text, document_id=target.document_id, scope=target.scope, vectors=matrix)
        return True

    def _schedule_heal(self, target: Target) -> None:
        self._schedule(target, "index", self._index_stored)

    def _schedule_vectors(self, target: Target) -> None:
        if target.stored is not None and self._texts is not None:
            self._schedule(target, "embed", self._embed_stored)

    async def _embed_stored(self, target: Target) -> bool:
        """Load (or make) the span vectors of ``target`` and index it with them."""
        assert self._vectors is not None and self._texts is not None and target.stored is not None
        location = target.stored
        text = await self._texts.load(location.partition_key, location.document_id, location.content_hash)
        if text is None or index_version(text.extracted_text_hash, text.chunking_version) != target.version:
            return False
        matrix = await self._vectors.load(text, location)
        if matrix is None:
            matrix = await self._vectors.embed_document(text, location)
        await self.index(text, document_id=target.document_id, scope=target.scope, vectors=matrix)
        return True

    def _schedule(self, target: Target, what: str, work: Callable[[Target], Awaitable[bool]]) -> None:
        key = (target.scope.organization, target.document_id, f"{what}:{target.version}")
        if self._closed or key in self._scheduled:
            return
        failed_at = self._failed.get(key)
        if failed_at is not None and time.monotonic() - failed_at < RETRY_AFTER_SECONDS:
            return
        self._scheduled.add(key)

        async def run() -> None:
            try:
                async with self._slots:
                    if not await work(target):
                        self._failed[key] = time.monotonic()
                    else:
                        self._failed.pop(key, None)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._failed[key] = time.monotonic()
                logger.warning("%s %s in the background failed: %s", what, target.document_id, type(exc).__name__)
            finally:
                self._scheduled.discard(key)

        task = asyncio.create_task(run(), name=f"{what}-{target.document_id}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def settle(self) -> None:
        """Wait for the background indexing and embedding running now (tests and benchmarks)."""
        while self._background or self._healing:
            await asyncio.gather(*self._background, *self._healing.values(), return_exceptions=True)

    async def aclose(self) -> None:
        """Cancel background work and wait for it to stop."""
        self._closed = True
        tasks = [*self._background, *self._healing.values()]
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- the lexical leg ---------------------------------------------------------------------------------------

    async def _lexical(
        self,
        engine: SearchEngine,
        organization: str,
        targets: Sequence[Target],
        query: str,
        pool: int,
        prepared: _Query | None = None,
    ) -> tuple[list[RankedSpan], int]:
        """The lexical ranking of ``targets`` (``pool`` long at most) and the rounds it took (``prepared``: the
        query's terms and statistics, when they were read already)."""
        if prepared is None:
            prepared = await _prepare(engine, organization, query)
        if prepared is None:
            return [], 1
        by_id = {target.document_id: target for target in targets}
        where = _filter(organization, targets)
        ranked = await _ranked(engine, where, by_id, prepared, pool) if prepared.weights else []
        unknown = prepared.unknown
        if unknown and (not ranked or len(unknown) * 2 >= len(prepared.own)):
            # Weak evidence: the documents do not use the query's words. One more round, with their own words
            # for it (close spellings, shared stems); kept only when it finds something.
            alternative = await _reformulated(engine, organization, prepared)
            if alternative:
                again = await _prepare(engine, organization, " ".join(alternative), expand=False)
                if again is not None and again.weights:
                    found = await _ranked(engine, where, by_id, again, pool)
                    return (found or ranked), 2
        return ranked, 1

    # -- the vector leg ----------------------------------------------------------------------------------------

    async def _vector(
        self,
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
        hits = await self._engine.search(
            SearchRequest(
                filter=_filter(organization, targets),
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

    async def _first_spans(self, organization: str, targets: Sequence[Target], limit: int) -> list[RankedSpan]:
        """The first spans of each document, in turn (round robin)."""
        per_document = max(1, -(-limit // max(len(targets), 1)))
        found = await asyncio.gather(*(self.spans(target, range(per_document)) for target in targets))
        chosen: list[RankedSpan] = []
        for depth in range(per_document):
            for spans in found:
                if depth < len(spans) and len(chosen) < limit:
                    chosen.append(spans[depth])
        return chosen


# -- the lexical leg's steps -----------------------------------------------------------------------------------


async def _prepare(engine: SearchEngine, organization: str, query: str, *, expand: bool = True) -> _Query | None:
    """The weighted terms of ``query`` and the corpus statistics of them; None when it has no term at all."""
    asked, suffix = split_context(query)
    own = list(dict.fromkeys(tokenize(asked)))
    if not own and not suffix:
        return None
    weights = {term: 1.0 for term in own}
    for term in tokenize(" ".join(suffix)):
        weights.setdefault(term, CONTEXT_WEIGHT)
    related = {term: related_terms(term) for term in own} if expand else {}
    asked_terms = [*weights, *(other for others in related.values() for other in others)]
    statistics = await engine.statistics(organization, asked_terms)
    known = statistics.frequencies
    unknown = [term for term in own if term not in known]
    for term in unknown:
        for other in related.get(term, ()):
            if other in known:
                weights.setdefault(other, RELATED_WEIGHT)
    # A term no span holds cannot score: it is kept out of the query (it still counts in the coverage's idf).
    present = {term: weight for term, weight in weights.items() if term in known}
    return _Query(
        own=own,
        weights=present,
        unknown=unknown,
        spans=statistics.spans,
        average_length=statistics.average_length,
        frequencies=dict(known),
        text=asked or None,
    )


def _filter(organization: str, targets: Sequence[Target]) -> SearchFilter:
    owners = frozenset(target.scope.owner for target in targets)
    documents = frozenset(target.document_id for target in targets) if len(targets) <= DOCUMENT_FILTER_LIMIT else None
    return SearchFilter(organization=organization, owners=owners, documents=documents)


def _idf(frequency: int, spans: int) -> float:
    """Lucene's idf (a term found nowhere weighs as if found once: it may be the user's word for the text's)."""
    found = max(frequency, 1)
    return math.log((max(spans, 1) - found + 0.5) / (found + 0.5) + 1.0)


async def _ranked(
    engine: SearchEngine,
    where: SearchFilter,
    targets: Mapping[str, Target],
    query: _Query,
    pool: int,
) -> list[RankedSpan]:
    """BM25 from the engine, then feedback and the sentence-level re-rank over the first candidates."""
    hits = await engine.search(
        SearchRequest(filter=where, limit=pool, terms=query.weights, title_weight=TITLE_WEIGHT, text=query.text)
    )
    candidates = [
        _Candidate(hit, target, hit.score * target.weight)
        for hit in hits
        if (target := targets.get(hit.document_id)) is not None and hit.version == target.version
    ]
    if not candidates:
        return []
    candidates.sort(key=_order)
    head = candidates[:RERANK_DEPTH]
    for candidate in head:
        candidate.tokenized()
    await _feedback(engine, where.organization, head, query)
    head.sort(key=_order)
    idf = {term: _idf(query.frequencies.get(term, 0), query.spans) for term in (query.own or list(query.weights))}
    top = head[0].score or 1.0
    for candidate in head:
        candidate.score = candidate.score / top + RERANK_WEIGHT * _coverage(idf, candidate)
    for candidate in candidates[RERANK_DEPTH:]:
        candidate.score = candidate.score / top
    candidates.sort(key=_order)
    return [RankedSpan(candidate.target, candidate.hit.span, round(candidate.score, 4)) for candidate in candidates]


def _order(candidate: _Candidate) -> tuple[float, str, int]:
    return (-candidate.score, candidate.hit.document_id, candidate.hit.span.ordinal)


async def _feedback(engine: SearchEngine, organization: str, head: list[_Candidate], query: _Query) -> None:
    """Pseudo-relevance feedback: terms shared by at least two of the best spans (and rare in the corpus) add
    their BM25, at :data:`FEEDBACK_WEIGHT`, to every candidate of ``head`` that holds them."""
    best = head[:FEEDBACK_SPANS]
    if len(best) < 2:
        return
    shared: Counter[str] = Counter()
    for candidate in best:
        assert candidate.sentences is not None
        shared.update(set().union(*candidate.sentences) - set(query.weights) if candidate.sentences else set())
    terms = [term for term, count in shared.items() if count >= 2]
    if not terms:
        return
    statistics = await engine.statistics(organization, terms)
    idf = {term: _idf(statistics.frequencies.get(term, 0), statistics.spans) for term in terms}
    chosen = sorted(terms, key=lambda term: (-shared[term] * idf[term], term))[:FEEDBACK_TERMS]
    average = max(statistics.average_length, 1.0)
    for candidate in head:
        assert candidate.tokens is not None
        counts = Counter(candidate.tokens)
        length = len(candidate.tokens)
        bonus = 0.0
        for term in chosen:
            frequency = counts.get(term, 0)
            if frequency:
                norm = frequency + K1 * (1.0 - B + B * length / average)
                bonus += idf[term] * frequency * (K1 + 1.0) / norm
        candidate.score += FEEDBACK_WEIGHT * bonus * candidate.target.weight


def _coverage(idf: Mapping[str, float], candidate: _Candidate) -> float:
    """The best idf-weighted share of the query terms one sentence of the span holds, its section title counting
    as part of every sentence and its neighbours for :data:`NEIGHBOUR_CREDIT`."""
    total = sum(idf.values())
    sentences = candidate.sentences or []
    if not total or not sentences:
        return 0.0
    span = candidate.hit.span
    title = frozenset(span.title_terms or (tokenize(span.section) if span.section else ()))
    best = 0.0
    for index, terms in enumerate(sentences):
        nearby = frozenset().union(*sentences[max(index - 1, 0) : index], *sentences[index + 1 : index + 2])
        value = 0.0
        for term, weight in idf.items():
            if term in terms or term in title:
                value += weight
            elif term in nearby:
                value += weight * NEIGHBOUR_CREDIT
        best = max(best, value)
    return best / total


async def _reformulated(engine: SearchEngine, organization: str, query: _Query) -> list[str]:
    """The query with every unknown term replaced by the corpus's terms closest to it (close spellings, shared
    stems); ``[]`` when no unknown term has a stand-in (another round would find the same)."""
    known = [term for term in query.own if term in query.frequencies]
    alternatives: list[str] = []
    for term in query.unknown:
        vocabulary = await engine.vocabulary(organization, term[:2], VOCABULARY_LIMIT)
        found = difflib.get_close_matches(term, vocabulary, n=MAX_ALTERNATIVES, cutoff=CLOSE_SPELLING)
        if len(term) >= PREFIX:
            stem = term[:PREFIX]
            found += [word for word in vocabulary if word.startswith(stem) and word not in found]
        alternatives += [word for word in found[:MAX_ALTERNATIVES] if word not in alternatives]
    return [*known, *alternatives] if alternatives else []


def _fused(rankings: Sequence[Sequence[RankedSpan]], limit: int) -> list[RankedSpan]:
    """Reciprocal rank fusion of rankings of spans (the score is then the RRF score)."""
    by_key: dict[tuple[str, int], RankedSpan] = {}
    for ranking in rankings:
        for ranked in ranking:
            by_key.setdefault((ranked.target.document_id, ranked.span.ordinal), ranked)
    fused = reciprocal_rank_fusion(
        [[(ranked.target.document_id, ranked.span.ordinal) for ranked in ranking] for ranking in rankings], limit
    )
    return [RankedSpan(by_key[key].target, by_key[key].span, value) for key, value in fused]


def _observed(task: asyncio.Task[Matrix]) -> None:
    # Retrieving the exception keeps asyncio from logging it as never retrieved; the retrieval reports it.
    if not task.cancelled():
        task.exception()
