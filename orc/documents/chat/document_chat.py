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
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from orc.contracts import (
    DocumentChatMetadata,
    DocumentChatResult,
    FileRef,
    PlaceToLook,
    RetrievalLegs,
    SourceSpan,
    Usage,
)
from orc.documents.catalog.summaries import FileSummaries, file_digests_of
from orc.documents.chat.file_cache import ProcessedFileCache
from orc.documents.chat.session_texts import NOTHING_PROCESSED, ProcessedTexts
from orc.documents.parsing.extraction_pool import ExtractionPool
from orc.documents.parsing.fair_turns import organization_of
from orc.documents.records import session_scope
from orc.errors import (
    InvalidInput,
    ItemNotFound,
    ModelBehaviourError,
    NotFound,
    OrcError,
    PayloadTooLarge,
    ServiceUnavailable,
)
from orc.models.declines import is_plain_decline
from orc.models.faults import model_fault
from orc.models.metering import cache_read_tokens, message_usage
from orc.models.places import places_to_look
from orc.models.prompting import format_sources, load_prompt
from orc.models.summaries import digests_section, summary_request
from orc.names import BlobPaths, normalize_blob_names
from orc.principal import Principal
from orc.search.memory import MemorySearchEngine
from orc.search.port import index_version
from orc.search.retriever import Retriever, Target
from orc.search.text_store import process_extracted
from orc.storage.ports import BlobInfo, BlobStore
from orc.telemetry import model_call, record_model_call

if TYPE_CHECKING:  # numpy only where vectors are made
    from orc.search.vectors import Matrix

logger = logging.getLogger(__name__)

DocumentChatMode = Literal["answer", "evidence"]
"""``answer``: the tool's own grounded answer (one model call). ``evidence``: the ranked spans and the file handles
only, ``answer`` empty and no model call: the orchestrator's answer node makes the turn's one call."""


@dataclass(frozen=True, slots=True)
class _LoadedFile:
    blob_name: str
    file_id: str
    target: Target
    reused: bool
    document_id: str | None = None
    """The catalog id citations name (none for a blob with no catalog record)."""


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
        retriever: Retriever | None = None,
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
        summaries: FileSummaries | None = None,
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
        # Without one, documents are ranked in memory for each call (a document_chat without the document store).
        self._retriever = retriever if retriever is not None else Retriever(MemorySearchEngine())
        self._summaries = summaries

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
        query_vector = self._retriever.embed_query(question)
        try:
            files = await self._load_all(principal, conversation_id, scope, names, cached_ids)
            depth = self._evidence_sources if mode == "evidence" else self._max_sources
            sources, rounds, retrieval = await self._retrieve(
                principal, conversation_id, question, files, query_vector, depth
            )
        except BaseException:
            if query_vector is not None:
                query_vector.cancel()
            raise
        answer, model_calls, usage = "", 0, Usage()
        places: list[PlaceToLook] = []
        if mode == "answer":
            # "Summarize lease.md": the file's stored digest, and the spans its facts cite among the sources.
            digests, summarized = await self._file_summaries(principal, conversation_id, question, names)
            sources += [source for source in summarized if source not in sources]
            system = load_prompt("document_chat.system").render(
                sources=format_sources(sources), file_digests=digests_section(digests)
            )
            reply = await self._ask(system, question)
            answer, model_calls, usage = reply.text.strip(), 1, message_usage(reply)
            if not answer:
                raise ModelBehaviourError("the model returned an empty answer")
            # A decline still says where to read, as a turn's does.
            places = places_to_look(question, sources) if is_plain_decline(answer) else []
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
                places_to_look=places,
                retrieval_rounds=rounds,
                elapsed_ms=round(elapsed_ms, 1),
                retrieval=retrieval,
            ),
        )

    async def _file_summaries(
        self, principal: Principal, conversation_id: str, question: str, names: Sequence[str]
    ) -> tuple[str, list[SourceSpan]]:
        """The digests of the files a summary request names ("What is lease.md about?"), as the prompt shows
        them, and the spans they cite; nothing for any other question."""
        request = summary_request(question)
        wanted = request.documents(names) if request is not None and self._summaries is not None else []
        if not wanted or self._summaries is None:
            return "", []
        found = await self._summaries(principal, conversation_id, None, wanted)
        return file_digests_of(found)

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
            found = await self._texts.targets(principal, conversation_id, {name: infos[name] for name in missing})
            targets = found.targets
            unprocessed = [name for name in missing if name not in targets]
            if unprocessed:
                targets.update(await self._extract_all(principal, conversation_id, paths, infos, unprocessed))
            for name in missing:
                loaded[name] = self._keep(
                    cached_ids.get(name), name, infos[name], scope, targets[name], found.document_ids.get(name)
                )
        return [loaded[name] for name in names]

    async def _extract_all(
        self,
        principal: Principal,
        conversation_id: str,
        paths: dict[str, str],
        infos: dict[str, BlobInfo],
        names: Sequence[str],
    ) -> dict[str, Target]:
        """Download and extract ``names`` concurrently; the first failure cancels the rest and is raised as
        itself."""
        try:
            async with asyncio.TaskGroup() as group:
                tasks = {
                    name: group.create_task(self._extract(principal, conversation_id, paths[name], infos[name], name))
                    for name in names
                }
        except BaseExceptionGroup as failures:
            # Callers and the MCP tool map single, typed errors; a group of them would hide the code.
            raise _most_relevant(failures) from None
        return {name: task.result() for name, task in tasks.items()}

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
        return _LoadedFile(name, entry.file_id, entry.target, reused=True, document_id=entry.document_id)

    def _keep(
        self,
        cached_id: str | None,
        name: str,
        info: BlobInfo,
        scope: str,
        target: Target,
        document_id: str | None,
    ) -> _LoadedFile:
        """Cache a file just read or extracted: under ``cached_id`` when it is still good (it came from another
        instance, or this one forgot it), else under a new id."""
        honoured = cached_id is not None and self._cache.honours(cached_id, name, info.etag, scope=scope)
        entry = self._cache.put(
            scope=scope,
            blob_name=name,
            etag=info.etag,
            target=target,
            file_id=cached_id if honoured else None,
            document_id=document_id,
        )
        return _LoadedFile(name, entry.file_id, entry.target, reused=honoured, document_id=document_id)

    async def _extract(
        self, principal: Principal, conversation_id: str, path: str, info: BlobInfo, name: str
    ) -> Target:
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
        text = await asyncio.to_thread(process_extracted, extracted)
        return Target(
            # Unique per conversation and blob: the retriever keeps unstored texts of many conversations at once.
            document_id=f"blob:{principal.user}/{conversation_id}/{name}",
            name=name,
            version=index_version(text.extracted_text_hash, text.chunking_version),
            scope=session_scope(principal.organization, principal.user, conversation_id),
            text=text,
        )

    async def _retrieve(
        self,
        principal: Principal,
        conversation_id: str,
        question: str,
        files: list[_LoadedFile],
        query_vector: asyncio.Task[Matrix] | None,
        depth: int,
    ) -> tuple[list[SourceSpan], int, RetrievalLegs]:
        """The ``depth`` best spans across the files (the first spans of each when nothing matches), the rounds it
        took and the legs that ran."""
        found = await self._retriever.retrieve(
            question,
            principal.organization,
            [file.target for file in files],
            limit=depth,
            query_vector=query_vector,
            fill=True,
        )
        missing = {target.document_id for target in (*found.unreadable, *found.indexing)}
        if missing:
            # Processed once, unreadable now (or not indexed yet): read from the blob this time.
            await self._reread(principal, conversation_id, files, missing)
            found = await self._retriever.retrieve(
                question,
                principal.organization,
                [file.target for file in files],
                limit=depth,
                fill=True,
            )
        catalog_ids = {file.target.document_id: file.document_id for file in files}
        sources = [
            SourceSpan(
                ref=ranked.ref,
                document=ranked.target.name,
                document_id=catalog_ids.get(ranked.target.document_id),
                span_id=ranked.span.span_id,
                page=ranked.span.page,
                text=ranked.span.text,
                section=ranked.span.section,
            )
            for ranked in found.spans
        ]
        return sources, found.rounds, found.legs

    async def _reread(
        self, principal: Principal, conversation_id: str, files: list[_LoadedFile], document_ids: set[str]
    ) -> None:
        """Extract again the files whose stored version the retriever could not search."""
        paths = {
            file.blob_name: BlobPaths.session_blob(
                principal.organization, principal.user, conversation_id, file.blob_name
            )
            for file in files
            if file.target.document_id in document_ids
        }
        infos = await self._current_infos(principal, conversation_id, paths)
        extracted = await self._extract_all(
            principal, conversation_id, paths, infos, [name for name in paths if name in infos]
        )
        for position, file in enumerate(files):
            if file.blob_name in extracted:
                files[position] = _LoadedFile(
                    file.blob_name, file.file_id, extracted[file.blob_name], file.reused, file.document_id
                )

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
