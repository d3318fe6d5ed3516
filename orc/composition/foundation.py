"""The lower layers of composition: the stores, and what is served from them without a model.

:func:`orc.composition.build_runtime` builds the process on a :class:`Foundation`; a command that only reads what
is stored (``orc sessions list``, ``orc docs list``, ``orc contexts list``) opens the same :class:`Foundation` alone
with :func:`open_foundation`, so it goes through the same services as the HTTP routes and MCP tools and loads no
model, graph or MCP server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orc import log_safety
from orc.admission import MAX_CONCURRENT_UPLOADS, UNLIMITED, Admission, Limits, RateLimit
from orc.composition.stores import JobQueues, Stores, open_job_queues, open_search_engine, open_stores
from orc.composition.tuning import TUNED, Tuning
from orc.conversations import ConversationRepository
from orc.conversations.context_requests import ContextRequests
from orc.conversations.exporting import Exports
from orc.documents.catalog.context_documents import ContextDocuments
from orc.documents.catalog.contexts import ContextDirectory
from orc.documents.catalog.scopes import DocumentScopes
from orc.documents.catalog.sources import DocumentSources
from orc.documents.intake.leases import ProcessingLeases
from orc.documents.intake.processing import DocumentProcessor, ProcessingJob
from orc.documents.intake.supplied import FileTexts
from orc.documents.parsing.extraction_pool import ExtractionPool
from orc.documents.parsing.limits import ExtractionLimits
from orc.documents.sessions import SessionFiles
from orc.idempotency import IdempotencyKeys
from orc.jobs.messages import processing_message
from orc.models.embeddings import EmbeddingModel, build_embedding_model
from orc.output_policy import OutputPolicy
from orc.search.retriever import Retriever
from orc.search.text_store import TextStore
from orc.sessions import Sessions
from orc.settings import Settings
from orc.storage.ports import DocumentCollection
from orc.storage.queues import InProcessJobQueue
from orc.storage.traced import TracedCollectionProvider, traced_blobs
from orc.telemetry import configure_telemetry, tracing_enabled

if TYPE_CHECKING:  # numpy only where vectors are made
    from orc.search.vectors import SpanVectors


def embedding_model_from_settings(
    settings: Settings, stack: AsyncExitStack, tuning: Tuning = TUNED
) -> EmbeddingModel | None:
    """The embedding model ``ORC_EMBEDDINGS`` names (none when it is ``off``); what it holds open closes with
    ``stack``."""
    return build_embedding_model(
        settings.embeddings,
        base_url=settings.embeddings_base_url,
        api_key=settings.embeddings_api_key,
        timeout=settings.model_timeout_seconds,
        max_retries=settings.model_max_retries,
        batch_size=tuning.embeddings_batch_size,
        resources=stack,
    )


async def span_vectors(
    settings: Settings, stack: AsyncExitStack, stores: Stores, tuning: Tuning = TUNED
) -> SpanVectors | None:
    """Span vectors with the ``ORC_EMBEDDINGS`` model (none when it is ``off``)."""
    model = embedding_model_from_settings(settings, stack, tuning)
    if model is None:
        return None
    from orc.search.vectors import SpanVectors, SpanVectorStore  # numpy only where vectors are made

    return SpanVectors(
        model,
        SpanVectorStore(await stores.collections.collection("document_text")),
        query_timeout=settings.model_timeout_seconds,
    )


async def build_limits(settings: Settings, stores: Stores) -> Admission:
    """Every operation's per-principal limits, counted in the configured store: turns (rate, daily tokens,
    concurrent turns), uploads and supplies (files, bytes, concurrent uploads) and exports; none under
    ``ORC_AUTH=none`` (one local user has nobody to share the process with)."""
    if settings.auth == "none":
        return UNLIMITED
    mb = settings.upload_mb_per_window
    limits = Limits(
        await stores.collections.collection("quotas"),
        turn_rate=RateLimit.parse(settings.rate_limit),
        daily_tokens=settings.token_quota_daily,
        concurrent_turns=settings.max_concurrent_turns,
        upload_rate=RateLimit.parse(settings.upload_rate),
        upload_bytes=None if mb is None else mb << 20,
        export_rate=RateLimit.parse(settings.export_rate),
        concurrent_uploads=MAX_CONCURRENT_UPLOADS,
    )
    return limits if limits.enabled else UNLIMITED


def extraction_limits(tuning: Tuning = TUNED) -> ExtractionLimits:
    """The bounds of one document's extraction (decompression bombs, huge texts)."""
    return ExtractionLimits(
        max_decompressed_bytes=tuning.max_decompressed_bytes, max_extracted_chars=tuning.max_extracted_chars
    )


def extraction_pool(settings: Settings, stack: AsyncExitStack, tuning: Tuning = TUNED) -> ExtractionPool:
    """The one place documents are parsed (the processor, document_chat and supply share it), under the configured
    limits and deadline: worker processes started on first use (a serving process starts one ahead,
    :meth:`~orc.composition.Services.warm`) and stopped with the runtime, or threads
    (``ORC_EXTRACTION_PROCESSES=0``)."""
    pool = ExtractionPool(
        settings.extraction_processes,
        settings.extraction_memory_mb << 20,
        limits=extraction_limits(tuning),
        deadline_seconds=settings.extraction_seconds,
    )
    stack.push_async_callback(pool.aclose)
    return pool


@dataclass(frozen=True, slots=True)
class Parts:
    """What the foundation's services are built from, and the layers above build on: private to
    :mod:`orc.composition` (an entry point takes services, never these)."""

    settings: Settings
    tuning: Tuning
    stores: Stores
    catalog: DocumentCollection
    """The records of contexts, context documents and session files."""
    texts: TextStore
    """The extracted texts (what the tools read and a citation's source view shows)."""
    retriever: Retriever
    """The one retriever, over the search engine (``ORC_SEARCH``): every ranking of spans goes through it."""
    processor: DocumentProcessor
    """Turns a stored upload into text, spans and an index."""
    leases: ProcessingLeases
    """Who is processing which document (so a crash's work can be resumed)."""
    pool: ExtractionPool
    """Where documents are parsed, under the configured limits."""
    queues: JobQueues
    """The job queues (in-process ones, which nobody writes to, unless ``ORC_JOBS=queue``)."""
    admission: Admission
    """What admits every operation: turns, uploads, supplies, exports, digests (one fairness gate for all)."""


@dataclass(frozen=True, slots=True)
class Foundation:
    """What is stored, as the services that read and write it without a model: conversations, sessions and their
    files, contexts and their documents, the sources behind citations.

    Built once per process by :func:`build_foundation`; the upper layers (digests, the document tools, the MCP
    server, the turn service) are built on it by :mod:`orc.composition`.
    """

    conversations: ConversationRepository
    """Conversation history (written by turns, read by the sessions service and the scopes)."""
    sessions: Sessions
    """The caller's conversations: list, get, rename, rate, export."""
    output_policy: OutputPolicy
    """What a client may receive of any text (answers, exports, every response and tool result): built once."""
    session_files: SessionFiles
    """The files attached to each conversation."""
    directory: ContextDirectory
    """The context tree of each organization."""
    context_documents: ContextDocuments
    """The documents attached to contexts."""
    scopes: DocumentScopes
    """What a scope (a session, a focus context, the historical contexts) makes available."""
    sources: DocumentSources
    """A cited span in its document's text, and a document's bytes (the page's preview and download)."""
    context_requests: ContextRequests
    """The stored context requests of paused turns."""
    idempotency: IdempotencyKeys
    """``Idempotency-Key`` records of mutating requests."""
    file_texts: FileTexts
    """The text of files supplied to a context request: checked, admitted and parsed like uploads."""
    _parts: Parts
    """What it was built from, for :mod:`orc.composition` alone."""


async def build_foundation(
    settings: Settings,
    stack: AsyncExitStack,
    *,
    stores: Stores | None = None,
    job_queues: JobQueues | None = None,
    tuning: Tuning = TUNED,
    admission: Admission | None = None,
) -> Foundation:
    """The stores (``stores`` replaces the configured ones) and the services over them; closed with ``stack``.

    Given ``job_queues`` mean queue mode: uploads enqueue, a worker processes; a given ``admission`` replaces the
    configured limits."""
    # First: every entry point builds this, and no log record made from now on carries a configured secret.
    log_safety.install(log_safety.configured_secrets(settings))
    parts = await _parts(settings, stack, stores, job_queues, tuning, admission)
    collections, blobs, catalog, texts = parts.stores.collections, parts.stores.blobs, parts.catalog, parts.texts
    conversations = ConversationRepository(await collections.collection("conversations"))
    directory = ContextDirectory(catalog)
    limit = settings.max_upload_bytes
    files = SessionFiles(
        catalog, blobs, max_upload_bytes=limit, processor=parts.processor, texts=texts, admission=parts.admission
    )
    context_requests = ContextRequests(
        await collections.collection("context_requests"), await collections.collection("context_request_deadlines")
    )
    # Exports are admitted, bounded and rendered away from the event loop (orc.conversations.exporting).
    exports = Exports(parts.pool, parts.admission)
    context_documents = ContextDocuments(
        catalog, blobs, directory, parts.processor, texts, max_upload_bytes=limit, admission=parts.admission
    )
    scopes = DocumentScopes(
        directory=directory, context_documents=context_documents, session_files=files, conversations=conversations
    )
    output_policy = OutputPolicy.allowing(settings.output_image_hosts)
    return Foundation(
        conversations=conversations,
        sessions=Sessions(conversations, files, context_requests, exports, output_policy),
        output_policy=output_policy,
        session_files=files,
        directory=directory,
        context_documents=context_documents,
        scopes=scopes,
        sources=DocumentSources(scopes, texts, blobs),
        context_requests=context_requests,
        idempotency=IdempotencyKeys(await collections.collection("idempotency")),
        file_texts=FileTexts(parts.pool, max_upload_bytes=limit, admission=parts.admission),
        _parts=parts,
    )


async def _parts(
    settings: Settings,
    stack: AsyncExitStack,
    stores: Stores | None,
    job_queues: JobQueues | None,
    tuning: Tuning,
    admission: Admission | None,
) -> Parts:
    """The stores, the limits and the processing pipeline that turns uploads into searchable text."""
    stores = stores if stores is not None else await open_stores(settings, stack)
    configure_telemetry(json_logs=settings.log_format == "json")
    if tracing_enabled():
        # One span per storage call; not wrapped when nothing records spans, so untraced processes pay nothing.
        stores = Stores(TracedCollectionProvider(stores.collections), traced_blobs(stores.blobs), stores.search)
    collections = stores.collections
    catalog = await collections.collection("catalog")
    configured = job_queues if job_queues is not None else await open_job_queues(settings, stack)
    # In-process mode keeps asyncio tasks; its worker has queues nobody writes to (and nothing to do).
    queues = configured or JobQueues(documents=InProcessJobQueue(), digests=InProcessJobQueue())
    # Registered before the processor, so it stops after the jobs that use it.
    pool = extraction_pool(settings, stack, tuning)
    vectors = await span_vectors(settings, stack, stores, tuning)
    texts = TextStore(await collections.collection("document_text"))
    engine = stores.search if stores.search is not None else await open_search_engine(settings, stack, vectors)
    retriever = Retriever(engine, texts, vectors)
    # Registered after the engine, so background indexing stops before the engine closes.
    stack.push_async_callback(retriever.aclose)

    async def dispatch(job: ProcessingJob) -> None:
        await queues.documents.enqueue(processing_message(job))

    leases = ProcessingLeases(
        await collections.collection("processing_leases"), lease_seconds=tuning.processing_lease_seconds
    )
    processor = DocumentProcessor(
        catalog,
        stores.blobs,
        texts,
        retriever,
        max_document_bytes=settings.max_upload_bytes,
        dispatch=dispatch if configured is not None else None,
        leases=leases,
        extraction_pool=pool,
        vectors=vectors,
    )
    # Registered after the stores, so background jobs stop before the stores close.
    stack.push_async_callback(processor.aclose)
    admission = admission if admission is not None else await build_limits(settings, stores)
    return Parts(settings, tuning, stores, catalog, texts, retriever, processor, leases, pool, queues, admission)


def parts_of(foundation: Foundation) -> Parts:
    """What ``foundation`` was built from (for the layers :mod:`orc.composition` builds on it)."""
    return foundation._parts


@asynccontextmanager
async def open_foundation(settings: Settings) -> AsyncIterator[Foundation]:
    """The :class:`Foundation` alone, closed on exit: for a command that only reads or edits what is stored."""
    async with AsyncExitStack() as stack:
        yield await build_foundation(settings, stack)
