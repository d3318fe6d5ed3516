"""The document_chat service: answer a question over named session documents with one model call, or (mode
``evidence``) return the ranked spans and file handles with no model call, for a caller that answers itself.

document-chat-workflow "MCP Contract": ``{question, document_names, cached_file_info?}`` →
``{answer, files: [{file_id, blob_name}], metadata}``. A ``file_id`` in ``cached_file_info`` issued (by this
instance or another sharing the stores) for the same scope, blob and ETag, and not expired, is honoured: the
file is reused without a download; any other id (unknown, expired, stale, another user's) silently falls back
to fresh processing and a new id. Processing means reading the text, spans and index the document processor
already made (:mod:`orc.documents.chat.session_texts`); only a blob it never processed is downloaded and extracted.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from orc.contracts import DocumentChatMetadata, DocumentChatResult, FileRef, RetrievalLegs, SourceSpan, Usage
from orc.documents.chat.file_cache import ProcessedFileCache
from orc.documents.chat.session_texts import NOTHING_PROCESSED, ProcessedTexts
from orc.documents.parsing.extraction_pool import ExtractionPool
from orc.documents.parsing.fair_turns import organization_of
from orc.errors import (
    InvalidInput,
    ItemNotFound,
    ModelBehaviourError,
    NotFound,
    OrcError,
    PayloadTooLarge,
    ServiceUnavailable,
)
from orc.extracted import ExtractedDocument
from orc.models.faults import model_fault
from orc.models.metering import cache_read_tokens, message_usage
from orc.models.prompting import format_sources, load_prompt
from orc.names import BlobPaths, normalize_blob_names
from orc.principal import Principal
from orc.search.fusion import LEXICAL_ONLY, reciprocal_rank_fusion
from orc.search.hybrid import beside_lexical, start_query
from orc.search.span_index import SpanIndex, build_index
from orc.search.spans import Span, source_ref
from orc.search.text_store import process_extracted
from orc.search.vectors import Matrix, SpanVectors
from orc.storage.ports import BlobInfo, BlobStore
from orc.telemetry import model_call, record_model_call
from orc.text import tokenize
from orc.text.lexical import search
from orc.text.reformulation import reformulated

logger = logging.getLogger(__name__)

DocumentChatMode = Literal["answer", "evidence"]
"""``answer``: the tool's own grounded answer (one model call). ``evidence``: the ranked spans and the file handles
only, ``answer`` empty and no model call: the orchestrator's answer node makes the turn's one call."""


@dataclass(frozen=True, slots=True)
class _LoadedFile:
    blob_name: str
    file_id: str
    index: SpanIndex
    reused: bool
    document_id: str | None

    @property
    def spans(self) -> tuple[Span, ...]:
        return self.index.text.spans


def _index(extracted: ExtractedDocument) -> SpanIndex:
    """Spans and index of text already extracted."""
    return build_index(process_extracted(extracted))


class DocumentChatService:
    """Answers questions over a conversation's attached documents, reusing processed files by ``file_id``.

    Every storage path is built by :meth:`orc.names.BlobPaths.session_blob` from the principal and the
    conversation, so a caller can only ever read its own conversation's documents. ``texts`` finds what the
    document processor already made of them (by default nothing: every document is extracted here).
    """

    def __init__(
        self,
        blobs: BlobStore,
        cache: ProcessedFileCache,
        model: BaseChatModel,
        *,
        model_label: str,
        max_document_bytes: int,
        texts: ProcessedTexts = NOTHING_PROCESSED,
        max_sources: int = 8,
        evidence_sources: int = 48,
        max_question_chars: int,
        max_documents: int,
        model_timeout_seconds: float = 120.0,
        extraction_pool: ExtractionPool,
        vectors: SpanVectors | None = None,
    ) -> None:
        if min(max_sources, evidence_sources, max_documents, max_question_chars, max_document_bytes) < 1:
            raise ValueError("limits must be positive")
        self._blobs = blobs
        self._pool = extraction_pool
        self._cache = cache
        self._texts = texts
        self._model = model
        self._model_label = model_label
        self._max_document_bytes = max_document_bytes
        self._max_sources = max_sources
        # Evidence feeds the answer request, which packs more, shorter passages within its token budget
        # (orc.graph.packing): it needs a deeper ranking than the tool's own answer prompt.
        self._evidence_sources = evidence_sources
        self._max_question_chars = max_question_chars
        self._max_documents = max_documents
        self._model_timeout = model_timeout_seconds
        self._vectors = vectors

    @property
    def max_documents(self) -> int:
        """How many document names one call may carry."""
        return self._max_documents

    @property
    def max_question_chars(self) -> int:
        """The longest question accepted, in characters."""
        return self._max_question_chars

    async def answer(
        self,
        principal: Principal,
        conversation_id: str,
        question: str,
        document_names: Sequence[str],
        cached_file_info: Sequence[FileRef] | None = None,
        mode: DocumentChatMode = "answer",
    ) -> DocumentChatResult:
        """Answer ``question`` from the named documents of ``conversation_id`` (``mode="evidence"``: return the
        spans that would have been shown to the model, with an empty answer and no model call).

        Raises :class:`~orc.errors.InvalidInput` (empty question, no or too many names),
        :class:`~orc.errors.InvalidName`, :class:`~orc.errors.PayloadTooLarge` (question or document over its
        limit), :class:`~orc.errors.NotFound` (a document is not in the conversation),
        :class:`~orc.documents.parsing.extraction.ExtractionError` / :class:`~orc.errors.UnsupportedMediaType`
        (a document has no readable text) and :class:`~orc.errors.ServiceUnavailable` (storage or model).
        """
        started = time.perf_counter()
        question = self._check_question(question)
        names = normalize_blob_names(document_names)
        if not names:
            raise InvalidInput("document_names must name at least one document of the conversation")
        if len(names) > self._max_documents:
            raise InvalidInput(f"at most {self._max_documents} documents can be used in one question")
        scope = BlobPaths.session_prefix(principal.organization, principal.user, conversation_id)

        cached_ids = {ref.blob_name: ref.file_id for ref in cached_file_info or ()}
        # The query's vector is fetched while the files load and the lexical leg ranks.
        query_vector = start_query(self._vectors, question) if self._vectors is not None else None
        try:
            files = await self._load_all(principal, conversation_id, scope, names, cached_ids)
        except BaseException:
            if query_vector is not None:
                query_vector.cancel()
            raise

        depth = self._evidence_sources if mode == "evidence" else self._max_sources
        sources, rounds, retrieval = await self._retrieve(question, files, query_vector, depth)
        answer, model_calls, usage = "", 0, Usage()
        if mode == "answer":
            system = load_prompt("document_chat.system").render(sources=format_sources(sources))
            reply = await self._ask(system, question)
            answer, model_calls, usage = reply.text.strip(), 1, message_usage(reply)
            if not answer:
                raise ModelBehaviourError("the model returned an empty answer")
        elif mode != "evidence":
            raise InvalidInput("mode must be 'answer' or 'evidence'")

        outcome = "hit" if all(file.reused for file in files) else "miss"
        elapsed_ms = (time.perf_counter() - started) * 1000
        logger.info(
            "document_chat %s: documents=%d cache=%s sources=%d elapsed_ms=%.0f",
            "answered" if model_calls else "found evidence",
            len(files),
            outcome,
            len(sources),
            elapsed_ms,
        )
        return DocumentChatResult(
            answer=answer,
            files=[FileRef(file_id=file.file_id, blob_name=file.blob_name) for file in files],
            metadata=DocumentChatMetadata(
                cache=outcome,
                model=self._model_label,
                model_calls=model_calls,
                usage=usage,
                sources=sources,
                retrieval_rounds=rounds,
                elapsed_ms=round(elapsed_ms, 1),
                retrieval=retrieval,
            ),
        )

    def _check_question(self, question: str) -> str:
        if not isinstance(question, str) or not question.strip():
            raise InvalidInput("question must not be empty")
        if len(question) > self._max_question_chars:
            raise PayloadTooLarge(f"question is longer than {self._max_question_chars} characters")
        return question.strip()

    async def _load_all(
        self,
        principal: Principal,
        conversation_id: str,
        scope: str,
        names: list[str],
        cached_ids: dict[str, str],
    ) -> list[_LoadedFile]:
        """Reuse every valid cached file, and load the others concurrently; the first failure cancels the rest
        and is raised as itself."""
        paths = {
            name: BlobPaths.session_blob(principal.organization, principal.user, conversation_id, name)
            for name in names
        }
        infos = await self._current_infos(principal, conversation_id, paths)
        loaded: dict[str, _LoadedFile] = {}
        for name in names:
            info = infos.get(name)
            if info is None:
                raise _not_found(name)
            reused = self._reuse(cached_ids.get(name), name, info, scope)
            if reused is not None:
                loaded[name] = reused
        # A warm turn reuses every file: no storage call and no task is made for it.
        missing = [name for name in names if name not in loaded]
        if missing:
            found = await self._texts.indexes(principal, conversation_id, {name: infos[name] for name in missing})
            indexes = found.indexes
            unprocessed = [name for name in missing if name not in indexes]
            if unprocessed:
                try:
                    async with asyncio.TaskGroup() as group:
                        tasks = {
                            name: group.create_task(self._extract(paths[name], infos[name], name))
                            for name in unprocessed
                        }
                except BaseExceptionGroup as failures:
                    # Callers and the MCP tool map single, typed errors; a group of them would hide the code.
                    raise _most_relevant(failures) from None
                indexes.update((name, task.result()) for name, task in tasks.items())
            for name in missing:
                loaded[name] = self._keep(
                    cached_ids.get(name), name, infos[name], scope, indexes[name], found.document_ids.get(name)
                )
        return [loaded[name] for name in names]

    async def _current_infos(
        self, principal: Principal, conversation_id: str, paths: dict[str, str]
    ) -> dict[str, BlobInfo]:
        """Each document's current ETag: one ``head`` for one document, one prefix listing for several.

        A warm turn then costs one storage round trip here however many documents are attached.
        """
        if len(paths) == 1:
            ((name, path),) = paths.items()
            info = await self._blobs.head(path)
            return {name: info} if info is not None else {}
        listed = {
            info.name: info
            for info in await self._blobs.list(
                BlobPaths.session_prefix(principal.organization, principal.user, conversation_id)
            )
        }
        return {name: listed[path] for name, path in paths.items() if path in listed}

    def _reuse(self, cached_id: str | None, name: str, info: BlobInfo, scope: str) -> _LoadedFile | None:
        """The file ``cached_id`` names, if this process holds it and it is this scope's current ``name``."""
        if cached_id is None:
            return None
        entry = self._cache.get(cached_id, name, info.etag, scope=scope)
        if entry is None:
            return None
        return _LoadedFile(
            blob_name=name, file_id=entry.file_id, index=entry.index, reused=True, document_id=entry.document_id
        )

    def _keep(
        self,
        cached_id: str | None,
        name: str,
        info: BlobInfo,
        scope: str,
        index: SpanIndex,
        document_id: str | None,
    ) -> _LoadedFile:
        """Cache a file just read or extracted: under ``cached_id`` when it is still good (it came from another
        instance, or this one forgot it), else under a new id."""
        honoured = cached_id is not None and self._cache.honours(cached_id, name, info.etag, scope=scope)
        entry = self._cache.put(
            scope=scope,
            blob_name=name,
            etag=info.etag,
            index=index,
            file_id=cached_id if honoured else None,
            document_id=document_id,
        )
        return _LoadedFile(
            blob_name=name, file_id=entry.file_id, index=entry.index, reused=honoured, document_id=document_id
        )

    async def _extract(self, path: str, info: BlobInfo, name: str) -> SpanIndex:
        if info.size > self._max_document_bytes:
            raise _too_large(name, self._max_document_bytes)
        try:
            data, info = await self._blobs.get(path)
        except ItemNotFound:
            # Deleted between head and get.
            raise _not_found(name) from None
        if len(data) > self._max_document_bytes:
            raise _too_large(name, self._max_document_bytes)
        extracted = await self._pool.extract(data, name, info.content_type, organization=organization_of(path))
        return await asyncio.to_thread(_index, extracted)

    async def _retrieve(
        self, question: str, files: list[_LoadedFile], query_vector: asyncio.Task[Matrix] | None, depth: int
    ) -> tuple[list[SourceSpan], int, RetrievalLegs]:
        """The ``depth`` best spans: the lexical leg alone, or (with embeddings) fused with the vector leg by
        reciprocal rank fusion."""
        if self._vectors is None or query_vector is None:
            sources, rounds = self._select_sources(question, files, depth)
            return sources, rounds, LEXICAL_ONLY
        (sources, rounds), vector = await beside_lexical(
            self._vectors,
            query_vector,
            [file.index.text for file in files],
            [1.0] * len(files),
            lambda: self._select_sources(question, files, depth),
            depth,
        )
        retrieval = vector.legs(self._vectors.label, [file.blob_name for file in files])
        if not vector.hits:
            return sources, rounds, retrieval
        nearest = [_source(files[hit.document], files[hit.document].spans[hit.span]) for hit in vector.hits]
        terms = tokenize(question)
        # Without a shared word the lexical "ranking" is only the documents' first spans: the vector leg's alone.
        matched = rounds > 1 or any(term in file.index.postings.terms for file in files for term in terms)
        rankings = (
            [[source.ref for source in sources], [source.ref for source in nearest]]
            if matched
            else [[source.ref for source in nearest]]
        )
        by_ref = {source.ref: source for source in (*sources, *nearest)}
        fused = reciprocal_rank_fusion(rankings, depth)
        return [by_ref[ref] for ref, _ in fused], rounds, retrieval

    def _select_sources(self, question: str, files: list[_LoadedFile], depth: int) -> tuple[list[SourceSpan], int]:
        """The best-matching spans across all files (the first spans of each file when nothing matches), and the
        retrieval rounds it took."""
        candidates = [(file, span) for file in files for span in file.spans]
        offsets = list(itertools.accumulate((file.index.span_count for file in files), initial=0))
        groups = [file.index.lexical for file in files]
        terms = tokenize(question)
        ranked = [offsets[found.group] + found.passage for found in search(question, groups, limit=depth)]
        rounds = 1
        unknown = [term for term in terms if not any(term in group.body.terms for group in groups)]
        if unknown and (not ranked or len(unknown) * 2 >= len(terms)):
            # Weak evidence: the documents do not use the question's words. One more round, with their own
            # words for it (close spellings, shared stems); kept only when it finds something.
            vocabulary = {term for group in groups for term in group.body.terms}
            alternative = reformulated(terms, vocabulary)
            if alternative:
                rounds = 2
                again = search(" ".join(alternative), groups, limit=depth)
                ranked = [offsets[found.group] + found.passage for found in again] or ranked
        if ranked:
            chosen = [candidates[index] for index in ranked]
        else:
            # Nothing shares a word with the question: show the start of each document (round robin) so the
            # model can still say it could not find the answer, or answer a question phrased differently.
            chosen = []
            level = 0
            while len(chosen) < depth and any(level < len(file.spans) for file in files):
                for file in files:
                    if level < len(file.spans) and len(chosen) < depth:
                        chosen.append((file, file.spans[level]))
                level += 1
        return [_source(file, span) for file, span in chosen], rounds

    async def _ask(self, system: str, question: str) -> AIMessage:
        try:
            # A timeout scope, not wait_for: on Python 3.11 wait_for wraps the call in a task of its own.
            with model_call("document_chat", self._model_label):
                async with asyncio.timeout(self._model_timeout):
                    reply = await self._model.ainvoke([SystemMessage(system), HumanMessage(question)])
                    spent = message_usage(reply)
                    record_model_call(spent.input_tokens, spent.output_tokens, cache_read_tokens(reply))
                    return reply
        except TimeoutError:
            raise ServiceUnavailable(
                "the language model did not answer in time; try again later", code="model_timeout"
            ) from None
        except OrcError:
            raise
        except Exception as exc:
            # Provider errors can carry endpoint URLs or request ids: log the type, raise a typed error.
            logger.warning("document_chat model call failed: %s", type(exc).__name__)
            raise model_fault(exc) or ServiceUnavailable(
                "the language model failed to answer; try again later", code="model_unavailable"
            ) from exc


def _source(file: _LoadedFile, span: Span) -> SourceSpan:
    return SourceSpan(
        ref=source_ref(file.blob_name, span.span_id),
        document=file.blob_name,
        document_id=file.document_id,
        span_id=span.span_id,
        page=span.page,
        text=span.text,
        section=span.section,
    )


def _not_found(name: str) -> NotFound:
    return NotFound(f"document {name!r} is not attached to this conversation; check the name or upload it first")


def _too_large(name: str, limit: int) -> PayloadTooLarge:
    size = f"{limit / (1024 * 1024):g} MB" if limit >= 1024 * 1024 else f"{limit} bytes"
    return PayloadTooLarge(f"document {name!r} is larger than the {size} limit; split it or upload a smaller copy")


def _most_relevant(failures: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error to report from a failed fan-out: a caller's mistake before a dependency failure."""
    leaves: list[BaseException] = []

    def walk(group: BaseExceptionGroup[BaseException]) -> None:
        for error in group.exceptions:
            if isinstance(error, BaseExceptionGroup):
                walk(error)
            else:
                leaves.append(error)

    walk(failures)
    for error in leaves:
        if isinstance(error, OrcError) and 400 <= error.status < 500:
            return error
    return leaves[0]
