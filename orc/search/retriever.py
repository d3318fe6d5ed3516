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
2. **Lexical leg** (:mod:`orc.search.lexical_leg`), made to survive paraphrase (each step cheap and
   deterministic): the query's own terms (:func:`orc.text.tokenize`), a follow-up's ``(context: …)`` words at a
   lower weight, WordNet-related terms for a word no span uses; BM25 over span text and section titles by the
   engine; then, over the first candidates, pseudo-relevance feedback (terms the best spans share) and a
   sentence-level re-rank (a span whose matching words sit in one sentence beats one whose words are spread).
   When the query's words are not in the documents, one more round with the documents' own spellings of them
   (``rounds`` 2).
3. **Vector leg** (:mod:`orc.search.vector_leg`), with embeddings: the query's vector (one request per
   retrieval, started by the caller before it reads anything, :meth:`Retriever.embed_query`) against the span
   vectors, fused with the lexical ranking by reciprocal rank fusion. A failed or slow embedding leaves the
   lexical ranking alone, said in ``metadata.retrieval``; a turn never fails for its vector leg. An engine that
   ranks hybrid queries itself (:attr:`~orc.search.port.SearchEngine.native_hybrid`: Azure AI Search, with its
   semantic ranker) is sent the lexical leg's weighted terms, the question and the vector in one hybrid request
   instead, and its ranking is the answer (``fusion`` ``engine``); the retriever's feedback, sentence re-rank and
   second round are then the engine's ranker's job.

Text that is not stored (a blob ``document_chat`` extracted on the fly) is ranked the same way by an in-memory
engine for the call.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from cachetools import TTLCache

from orc.contracts import RetrievalLegs
from orc.search.fusion import LEXICAL_ONLY
from orc.search.indexing import indexed_document
from orc.search.lexical_leg import RERANK_DEPTH, PreparedQuery, lexical_ranking, prepare_query
from orc.search.memory import MemorySearchEngine
from orc.search.port import IndexedDocument, IndexedEntry, ScopeFields, SearchEngine, index_version
from orc.search.targets import RankedSpan, Retrieval, Target, fused_spans
from orc.search.text_store import DocumentText, TextStore
from orc.search.vector_leg import hybrid_ranking, query_vector_of, vector_ranking

if TYPE_CHECKING:  # numpy and the embedding clients load only where vectors are made
    from orc.search.vectors import Matrix, SpanVectors

__all__ = ["FUSION_DEPTH", "RankedSpan", "Retrieval", "Retriever", "Target"]

logger = logging.getLogger(__name__)

FUSION_DEPTH = 3
"""Each leg ranks this many times the requested results before fusion, so a span ranked well by one leg only can
still make the cut."""
INLINE_INDEXING = 8
"""Documents a retrieval indexes itself before it searches; more are indexed in the background."""
MAX_BACKGROUND = 2
"""Documents one retriever indexes in the background at once."""
UNSTORED_DOCUMENTS = 200
"""Unstored texts (blobs document_chat extracted itself) a retriever keeps tokenized between questions."""
NEIGHBOUR_REACH = 2
"""How far from a hit (in spans) a retrieval that fills up to its limit reaches for neighbours."""
RETRY_AFTER_SECONDS = 60.0
"""How long a document whose background indexing or embedding failed waits before a search tries it again."""
FAILURES_KEPT = 10_000
"""Failed documents remembered for :data:`RETRY_AFTER_SECONDS` (the oldest forgotten first past it)."""


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
    ) -> None:
        self._engine = engine
        self._texts = texts
        self._vectors = vectors
        self._inline = inline_indexing
        self._healing: dict[tuple[str, str, str], asyncio.Task[bool]] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._scheduled: set[tuple[str, str, str]] = set()
        self._failed: TTLCache[tuple[str, str, str], bool] = TTLCache(FAILURES_KEPT, RETRY_AFTER_SECONDS)
        self._slots = asyncio.Semaphore(MAX_BACKGROUND)
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

        def entry() -> IndexedDocument:
            # In the worker thread with the spans: a large document's vectors as lists take a while to make.
            rows = vectors.tolist() if vectors is not None and model is not None else None
            return indexed_document(text, document_id=document_id, scope=scope, vectors=rows, vector_model=model)

        await self._engine.upsert(await asyncio.to_thread(entry))

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
        fill: bool = False,
    ) -> Retrieval:
        """The ``limit`` best spans of ``targets`` for ``query`` (all of ``organization``).

        ``query_vector`` is :meth:`embed_query`'s task (cancelled here if the retrieval fails). ``fill``: when
        fewer than ``limit`` spans match, add the neighbours of the hits (a passage that answers often sits next
        to the one that names its subject, in words the question does not use), and when nothing matches, return
        the first spans of each document in turn, so a model can still say it did not find the answer
        (document_chat does).
        """
        try:
            return await self._retrieve(query, organization, targets, limit, query_vector, fill)
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
        fill: bool,
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
        prepared: PreparedQuery | None = None
        if stored:
            # The engine's entries and the query's statistics are read together: one wait, not two.
            (entries, searchable, indexing, unreadable), prepared = await asyncio.gather(
                self._fresh(organization, stored), prepare_query(self._engine, organization, query)
            )
            stored = searchable
        depth = limit * FUSION_DEPTH if self._vectors is not None else limit
        pool = max(depth, RERANK_DEPTH)
        rankings: list[list[RankedSpan]] = []
        rounds = 1
        native, vector_error = await self._engine_hybrid(organization, stored, entries, prepared, query_vector, pool)
        if native is not None:
            rankings.append(native)
        elif stored:
            ranked, rounds = await lexical_ranking(self._engine, organization, stored, query, pool, prepared)
            rankings.append(ranked)
        if transient:
            await self._hold(organization, transient)
            ranked, again = await lexical_ranking(self._unstored, organization, transient, query, pool)
            rankings.append(ranked)
            rounds = max(rounds, again)
        lexical = fused_spans(rankings, pool) if len(rankings) > 1 else (rankings[0] if rankings else [])

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
            if native is None and vector_error is None:
                vector_hits, vector_error = await vector_ranking(
                    self._engine, organization, stored, query_vector, depth, model
                )
            if native is None and (vector_error is not None or (not vector_hits and len(waiting) == len(names))):
                legs = RetrievalLegs(
                    legs=["lexical"], embeddings=self._vectors.label, lexical_only=waiting, vector_error=vector_error
                )
            else:
                legs = RetrievalLegs(
                    legs=["lexical", "vector"],
                    fusion="rrf" if native is None else "engine",
                    embeddings=self._vectors.label,
                    lexical_only=waiting,
                )
        elif query_vector is not None:
            query_vector.cancel()

        spans = fused_spans([lexical, vector_hits], limit, heads=True) if vector_hits else lexical[:limit]
        if fill and len(spans) < limit:
            spans = await self._filled(organization, [*stored, *transient], spans, limit)
        return Retrieval(spans=spans, legs=legs, rounds=rounds, indexing=indexing, unreadable=unreadable)

    async def _engine_hybrid(
        self,
        organization: str,
        stored: Sequence[Target],
        entries: Mapping[str, IndexedEntry],
        prepared: PreparedQuery | None,
        query_vector: asyncio.Task[Matrix] | None,
        pool: int,
    ) -> tuple[list[RankedSpan] | None, str | None]:
        """The engine's own hybrid ranking of ``stored`` — one request with the terms, the question and the vector —
        and why there is no query vector when it failed. None when the engine does not rank hybrid queries itself,
        there are no embeddings or no vector, or a target's vectors are another model's (the engine's one filter
        would drop its spans from both legs): the retriever then ranks the legs apart and fuses them."""
        if query_vector is None or not stored or self._vectors is None or not self._engine.native_hybrid:
            return None, None
        model = self._vectors.store_key
        for target in stored:
            entry = entries.get(target.document_id)
            if entry is not None and entry.vector_model not in (None, model):
                return None, None
        vector, error = await query_vector_of(query_vector)
        if vector is None:
            return None, error
        return await hybrid_ranking(self._engine, organization, stored, prepared, vector, pool, model), None

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

    async def _index_stored(self, target: Target, *, embed: bool = False) -> bool:
        """Index ``target`` from its stored text and stored vectors (made now if ``embed``); False when the text
        cannot be read at the target's version."""
        if target.stored is None or self._texts is None:
            return False
        location = target.stored
        text = await self._texts.load(location.partition_key, location.document_id, location.content_hash)
        if text is None or index_version(text.extracted_text_hash, text.chunking_version) != target.version:
            return False
        matrix = None
        if self._vectors is not None:
            matrix = await self._vectors.load(text, location)
            if matrix is None and embed:
                matrix = await self._vectors.embed_document(text, location)
        await self.index(text, document_id=target.document_id, scope=target.scope, vectors=matrix)
        return True

    def _schedule_heal(self, target: Target) -> None:
        self._schedule(target, "index", self._index_stored)

    def _schedule_vectors(self, target: Target) -> None:
        if target.stored is not None and self._texts is not None:
            self._schedule(target, "embed", functools.partial(self._index_stored, embed=True))

    def _schedule(self, target: Target, what: str, work: Callable[[Target], Awaitable[bool]]) -> None:
        key = (target.scope.organization, target.document_id, f"{what}:{target.version}")
        if self._closed or key in self._scheduled or key in self._failed:
            return
        self._scheduled.add(key)

        async def run() -> None:
            try:
                async with self._slots:
                    if not await work(target):
                        self._failed[key] = True
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._failed[key] = True
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

    async def _filled(
        self, organization: str, targets: Sequence[Target], spans: list[RankedSpan], limit: int
    ) -> list[RankedSpan]:
        """``spans`` and, up to ``limit``, the neighbours of its hits (nearest first, the best hit's first); the
        first spans of each document when nothing matched."""
        if not spans:
            return await self._first_spans(organization, targets, limit)
        taken = {(ranked.target.document_id, ranked.span.ordinal) for ranked in spans}
        wanted: list[tuple[Target, int]] = []
        for ranked in spans:
            for distance in range(1, NEIGHBOUR_REACH + 1):
                for ordinal in (ranked.span.ordinal + distance, ranked.span.ordinal - distance):
                    key = (ranked.target.document_id, ordinal)
                    if ordinal >= 0 and key not in taken:
                        taken.add(key)
                        wanted.append((ranked.target, ordinal))
        by_target: dict[str, list[int]] = {}
        for target, ordinal in wanted:
            by_target.setdefault(target.document_id, []).append(ordinal)
        owners = {target.document_id: target for target, _ in wanted}
        found = await asyncio.gather(*(self.spans(owners[key], ordinals) for key, ordinals in by_target.items()))
        present = {(ranked.target.document_id, ranked.span.ordinal): ranked for group in found for ranked in group}
        neighbours = [present[key] for target, ordinal in wanted if (key := (target.document_id, ordinal)) in present]
        return [*spans, *neighbours][:limit]

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


def _observed(task: asyncio.Task[Matrix]) -> None:
    # Retrieving the exception keeps asyncio from logging it as never retrieved; the retrieval reports it.
    if not task.cancelled():
        task.exception()
