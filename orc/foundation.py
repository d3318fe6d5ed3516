"""The lower layers of composition: the stores, and what is served from them without a model.

:func:`orc.composition.build_runtime` builds the process on a :class:`Foundation`; a command that only reads what
is stored (``orc sessions list``, ``orc docs list``, ``orc contexts list``) opens the same :class:`Foundation` alone
with :func:`open_foundation`, so it goes through the same services as the HTTP routes and MCP tools and loads no
model, graph or MCP server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orc import log_safety
from orc import resources as azure_resources
from orc.conversations import ConversationRepository
from orc.conversations.context_requests import ContextRequests
from orc.conversations.exporting import Exports
from orc.documents.catalog.context_documents import ContextDocuments
from orc.documents.catalog.contexts import ContextDirectory
from orc.documents.catalog.scopes import DocumentScopes
from orc.documents.intake.leases import ProcessingLeases
from orc.documents.intake.processing import DocumentProcessor, ProcessingJob
from orc.documents.intake.supplied import FileTexts
from orc.documents.parsing.extraction_pool import ExtractionPool
from orc.documents.parsing.limits import ExtractionLimits
from orc.documents.sessions import SessionFiles
from orc.errors import ConfigurationError
from orc.idempotency import IdempotencyKeys
from orc.jobs.messages import processing_message
from orc.models.embeddings import build_embedding_model
from orc.output_policy import OutputPolicy
from orc.quotas import MAX_CONCURRENT_UPLOADS, OperationQuotas, Quotas, RateLimit
from orc.search.port import SearchEngine
from orc.search.retriever import Retriever
from orc.search.text_store import TextStore
from orc.sessions import Sessions
from orc.settings import Settings
from orc.storage.localfs import LocalBlobStore
from orc.storage.ports import BlobStore, CollectionProvider, DocumentCollection
from orc.storage.queues import InProcessJobQueue, JobQueue
from orc.storage.sqlite import SqliteCollectionProvider
from orc.storage.traced import TracedBlobStore, TracedCollectionProvider
from orc.telemetry import configure_telemetry, tracing_enabled

if TYPE_CHECKING:  # the Azure SDKs load only where Azure is configured, numpy only where vectors are made
    from orc.search.azure import AzureSearchEngine
    from orc.search.vectors import SpanVectors
    from orc.storage.azure_blob import AzureBlobStore
    from orc.storage.cosmos import CosmosCollectionProvider


@dataclass(frozen=True, slots=True)
class Stores:
    """The storage a process uses: named collections, one blob store, and the search index (``None``: the engine
    ``ORC_SEARCH`` configures)."""

    collections: CollectionProvider
    blobs: BlobStore
    search: SearchEngine | None = None


@dataclass(frozen=True, slots=True)
class JobQueues:
    """The two job queues (names as in infra/main.bicep): document processing and session digests."""

    documents: JobQueue
    digests: JobQueue


async def open_job_queues(settings: Settings, stack: AsyncExitStack) -> JobQueues | None:
    """Azure Storage Queues when ``ORC_JOBS=queue``; None for in-process jobs (asyncio tasks, the default).

    Where resources are not created (``ORC_RESOURCES``), a missing queue stops start-up, named."""
    if settings.jobs != "queue":
        return None
    from orc.storage.azure_queue import AzureJobQueue  # Azure SDK only when queues are used

    create = settings.creates_resources

    def queue(name: str) -> AzureJobQueue:
        if settings.queue_connection_string is not None:
            made = AzureJobQueue.from_connection_string(
                settings.queue_connection_string.get_secret_value(), name, create_queue=create
            )
        else:
            assert settings.queue_account_url is not None  # settings.check() made sure
            made = AzureJobQueue.from_account_url(settings.queue_account_url, name, create_queue=create)
        stack.push_async_callback(made.aclose)
        return made

    documents, digests = queue(settings.queue_documents), queue(settings.queue_digests)
    if not create:
        from orc.storage.azure_checks import missing_queues, refuse_to_start

        refuse_to_start(await missing_queues([documents, digests]))
    return JobQueues(documents=documents, digests=digests)


async def open_stores(settings: Settings, stack: AsyncExitStack) -> Stores:
    """The embedded stores (SQLite file + local folder in ``ORC_HOME``) or the Azure ones."""
    settings.check()
    if settings.storage == "embedded":
        # Off the event loop: a file-system call there stalls every other request (and `langgraph dev` refuses it).
        await asyncio.to_thread(settings.home.mkdir, parents=True, exist_ok=True)
        collections: CollectionProvider = SqliteCollectionProvider(settings.home / "orc.sqlite3")
        blobs: BlobStore = LocalBlobStore(settings.home / "blobs")
    else:
        cosmos, azure_blobs = azure_stores(settings)
        stack.push_async_callback(cosmos.aclose)
        stack.push_async_callback(azure_blobs.aclose)
        if not settings.creates_resources:
            from orc.storage.azure_checks import missing_blob_container, missing_cosmos_containers, refuse_to_start

            refuse_to_start([*await missing_cosmos_containers(cosmos), *await missing_blob_container(azure_blobs)])
        return Stores(collections=cosmos, blobs=azure_blobs)
    stack.push_async_callback(collections.aclose)
    stack.push_async_callback(blobs.aclose)
    return Stores(collections=collections, blobs=blobs)


def azure_stores(settings: Settings) -> tuple[CosmosCollectionProvider, AzureBlobStore]:
    """Cosmos DB and Blob Storage clients (one each per process); keys when given, otherwise Entra ID.

    They create missing containers only where ``ORC_RESOURCES`` allows it (never on Azure)."""
    # Imported here so that embedded deployments never load the Azure SDKs.
    from orc.storage.azure_blob import AzureBlobStore
    from orc.storage.cosmos import CosmosCollectionProvider

    create = settings.creates_resources
    assert settings.cosmos_endpoint is not None  # settings.check() made sure
    emulator: dict[str, Any] = (
        {"missing_read_status_codes": (404, 500), "client_options": {"enable_endpoint_discovery": False}}
        if settings.cosmos_emulator
        else {}
    )
    collections = CosmosCollectionProvider.from_endpoint(
        settings.cosmos_endpoint,
        database=settings.cosmos_database,
        key=settings.cosmos_key.get_secret_value() if settings.cosmos_key else None,
        create_containers=create,
        **emulator,
    )
    if settings.blob_connection_string is not None:
        blobs = AzureBlobStore.from_connection_string(
            settings.blob_connection_string.get_secret_value(), settings.blob_container, create_container=create
        )
    else:
        assert settings.blob_account_url is not None
        blobs = AzureBlobStore.from_account_url(
            settings.blob_account_url, settings.blob_container, create_container=create
        )
    return collections, blobs


async def span_vectors(settings: Settings, stack: AsyncExitStack, stores: Stores) -> SpanVectors | None:
    """Span vectors with the ``ORC_EMBEDDINGS`` model (none when it is ``off``)."""
    model = build_embedding_model(
        settings.embeddings,
        base_url=settings.embeddings_base_url,
        api_key=settings.embeddings_api_key.get_secret_value() if settings.embeddings_api_key else None,
        timeout=settings.embeddings_timeout_seconds,
        max_retries=settings.embeddings_max_retries,
        batch_size=settings.embeddings_batch_size,
        resources=stack,
    )
    if model is None:
        return None
    from orc.search.vectors import SpanVectors, SpanVectorStore  # numpy only where vectors are made

    return SpanVectors(
        model,
        SpanVectorStore(await stores.collections.collection("document_text")),
        query_timeout=settings.embeddings_timeout_seconds,
    )


async def open_search_engine(
    settings: Settings, stack: AsyncExitStack, vectors: SpanVectors | None = None
) -> SearchEngine:
    """The search engine (``ORC_SEARCH``), closed with ``stack``: the embedded one, its index in ``ORC_HOME/search``
    (shared by every process that uses that home), or Azure AI Search, whose index is created where
    ``ORC_RESOURCES`` allows and otherwise checked: a missing or unusable index stops start-up, named."""
    if settings.search == "azure":
        return await open_azure_search(settings, stack, vectors, create=settings.creates_resources)
    from orc.search.embedded import EmbeddedSearchEngine  # tantivy only where the embedded engine is used

    engine = EmbeddedSearchEngine(settings.home / "search")
    stack.push_async_callback(engine.aclose)
    return engine


def azure_search_engine(settings: Settings, **client_options: Any) -> AzureSearchEngine:
    """The Azure AI Search engine ``settings`` configure (its index not yet checked): an admin key when
    ``ORC_SEARCH_KEY`` is set, otherwise Entra ID."""
    from orc.search.azure import AzureSearchEngine  # the search SDK only where Azure AI Search is used

    if not settings.search_endpoint:
        raise ConfigurationError("missing required setting(s): ORC_SEARCH_ENDPOINT")
    return AzureSearchEngine.from_endpoint(
        settings.search_endpoint,
        azure_resources.SEARCH_INDEX,
        key=settings.search_key.get_secret_value() if settings.search_key else None,
        semantic=settings.search_semantic,
        **client_options,
    )


async def open_azure_search(
    settings: Settings,
    stack: AsyncExitStack,
    vectors: SpanVectors | None,
    *,
    create: bool,
    client_options: Mapping[str, Any] | None = None,
) -> AzureSearchEngine:
    """The Azure AI Search engine on ``ORC_SEARCH_ENDPOINT`` (a key, or Entra ID), its index prepared: created when
    ``create`` (its vector size measured on the embedding model), else checked. ``client_options`` go to the SDK's
    clients (a transport, in tests)."""
    from orc.storage.azure_checks import refuse_to_start

    engine = azure_search_engine(settings, **(client_options or {}))
    stack.push_async_callback(engine.aclose)

    async def measure() -> int:
        assert vectors is not None
        return len((await vectors.model.embed(["orc"], "query"))[0])

    refuse_to_start(await engine.prepare(create=create, measure=measure if vectors is not None else None))
    return engine


async def build_quotas(settings: Settings, stores: Stores) -> Quotas:
    """The consumption limits ``settings`` configure, counted in the configured store; none under ``ORC_AUTH=none``
    (one local user has nobody to share the process with)."""
    if settings.auth == "none":
        return Quotas(None, rate=None, daily_tokens=None, max_concurrent=None)
    return Quotas(
        await stores.collections.collection("quotas"),
        rate=RateLimit.parse(settings.rate_limit),
        daily_tokens=settings.token_quota_daily,
        max_concurrent=settings.max_concurrent_turns,
    )


async def build_operation_quotas(settings: Settings, stores: Stores, quotas: Quotas) -> OperationQuotas:
    """Uploads (files, bytes) and exports per principal per window, a flood of uploads giving way to others'
    turns through ``quotas``; none under ``ORC_AUTH=none`` (as :func:`build_quotas`)."""
    if settings.auth == "none":
        return OperationQuotas(None, files=None, max_bytes=None)
    mb = settings.upload_mb_per_window
    return OperationQuotas(
        await stores.collections.collection("quotas"),
        files=RateLimit.parse(settings.upload_rate),
        max_bytes=None if mb is None else mb << 20,
        exports=RateLimit.parse(settings.export_rate),
        max_concurrent_uploads=MAX_CONCURRENT_UPLOADS,
        fairness=quotas,
    )


def extraction_limits(settings: Settings) -> ExtractionLimits:
    """The bounds of one document's extraction (decompression bombs, huge texts)."""
    return ExtractionLimits(
        max_decompressed_bytes=settings.max_decompressed_bytes, max_extracted_chars=settings.max_extracted_chars
    )


def extraction_pool(settings: Settings, stack: AsyncExitStack) -> ExtractionPool:
    """The one place documents are parsed (the processor, document_chat and supply share it), under the configured
    limits and deadline: worker processes started on first use and stopped with the runtime, or threads
    (``ORC_EXTRACTION_PROCESSES=0``)."""
    pool = ExtractionPool(
        settings.extraction_processes,
        settings.extraction_memory_mb << 20,
        limits=extraction_limits(settings),
        deadline_seconds=settings.extraction_seconds,
    )
    stack.push_async_callback(pool.aclose)
    return pool


@dataclass(frozen=True, slots=True)
class Foundation:
    """What is stored and the services that read and write it without a model: conversations, sessions and their
    files, contexts and their documents, and the processing pipeline that turns uploads into searchable text.

    Built once per process by :func:`build_foundation`; the upper layers (digests, the document tools, the MCP
    server, the turn service) are built on it by :mod:`orc.composition`.
    """

    settings: Settings
    stores: Stores
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
    context_requests: ContextRequests
    """The stored context requests of paused turns."""
    idempotency: IdempotencyKeys
    """``Idempotency-Key`` records of mutating requests."""
    file_texts: FileTexts
    """The text of files supplied to a context request: checked, admitted and parsed like uploads."""
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
    vectors: SpanVectors | None
    """Span vectors (``None`` with ``ORC_EMBEDDINGS=off``)."""
    queues: JobQueues
    """The job queues (in-process ones, which nobody writes to, unless ``ORC_JOBS=queue``)."""
    quotas: Quotas
    """The per-principal turn limits and the fairness gate (a flood of uploads gives way through it too)."""


async def build_foundation(
    settings: Settings, stack: AsyncExitStack, *, stores: Stores | None = None, job_queues: JobQueues | None = None
) -> Foundation:
    """The stores (``stores`` replaces the configured ones) and the services over them; closed with ``stack``.

    Given ``job_queues`` mean queue mode: uploads enqueue, a worker processes."""
    # First: every entry point builds this, and no log record made from now on carries a configured secret.
    log_safety.install(log_safety.configured_secrets(settings))
    stores = stores if stores is not None else await open_stores(settings, stack)
    configure_telemetry(json_logs=settings.log_format == "json")
    if tracing_enabled():
        # One span per storage call; not wrapped when nothing records spans, so untraced processes pay nothing.
        stores = Stores(TracedCollectionProvider(stores.collections), TracedBlobStore(stores.blobs), stores.search)
    collections = stores.collections
    catalog = await collections.collection("catalog")
    conversations = ConversationRepository(await collections.collection("conversations"))
    configured = job_queues if job_queues is not None else await open_job_queues(settings, stack)
    # In-process mode keeps asyncio tasks; its worker has queues nobody writes to (and nothing to do).
    queues = configured or JobQueues(documents=InProcessJobQueue(), digests=InProcessJobQueue())
    # Registered before the processor, so it stops after the jobs that use it.
    pool = extraction_pool(settings, stack)
    vectors = await span_vectors(settings, stack, stores)
    quotas = await build_quotas(settings, stores)
    uploads = await build_operation_quotas(settings, stores, quotas)
    texts = TextStore(await collections.collection("document_text"))
    engine = stores.search if stores.search is not None else await open_search_engine(settings, stack, vectors)
    retriever = Retriever(engine, texts, vectors)
    # Registered after the engine, so background indexing stops before the engine closes.
    stack.push_async_callback(retriever.aclose)

    async def dispatch(job: ProcessingJob) -> None:
        await queues.documents.enqueue(processing_message(job))

    leases = ProcessingLeases(
        await collections.collection("processing_leases"), lease_seconds=settings.processing_lease_seconds
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
    directory = ContextDirectory(catalog)
    files = SessionFiles(
        catalog,
        stores.blobs,
        max_upload_bytes=settings.max_upload_bytes,
        processor=processor,
        texts=texts,
        admission=uploads,
    )
    context_requests = ContextRequests(
        await collections.collection("context_requests"), await collections.collection("context_request_deadlines")
    )
    # Exports are admitted, bounded and rendered away from the event loop (orc.conversations.exporting).
    exports = Exports(pool, uploads)
    context_documents = ContextDocuments(
        catalog,
        stores.blobs,
        directory,
        processor,
        texts,
        max_upload_bytes=settings.max_upload_bytes,
        admission=uploads,
    )
    output_policy = OutputPolicy.allowing(settings.output_image_hosts)
    return Foundation(
        settings=settings,
        stores=stores,
        conversations=conversations,
        sessions=Sessions(conversations, files, context_requests, exports, output_policy),
        output_policy=output_policy,
        session_files=files,
        directory=directory,
        context_documents=context_documents,
        scopes=DocumentScopes(
            directory=directory,
            context_documents=context_documents,
            session_files=files,
            conversations=conversations,
        ),
        context_requests=context_requests,
        idempotency=IdempotencyKeys(await collections.collection("idempotency")),
        file_texts=FileTexts(pool, max_upload_bytes=settings.max_upload_bytes, admission=uploads),
        catalog=catalog,
        texts=texts,
        retriever=retriever,
        processor=processor,
        leases=leases,
        pool=pool,
        vectors=vectors,
        queues=queues,
        quotas=quotas,
    )


@asynccontextmanager
async def open_foundation(settings: Settings) -> AsyncIterator[Foundation]:
    """The :class:`Foundation` alone, closed on exit: for a command that only reads or edits what is stored."""
    async with AsyncExitStack() as stack:
        yield await build_foundation(settings, stack)
