"""The one composition root: settings in, the process's :class:`Services` (stores, model, MCP server, graph) out.

Nothing here runs at import time; everything is built inside :func:`build_runtime` and closed when its context
exits. Entry points (HTTP, CLI, MCP transports, ``function_app.py``) take :class:`Services` and use the service
they need; none reaches through the orchestrator, which answers turns and manages conversations only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from mcp import ClientSession
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session

from mcp_server.scope import in_process_session
from mcp_server.server import build_mcp_server
from mcp_server.services import McpServices
from orc.conversations import ConversationRepository
from orc.conversations.context_requests import ContextRequests
from orc.conversations.exporting import Exports
from orc.conversations.title_writer import TitleWriter
from orc.digests.context import ContextFiles
from orc.digests.files import FileDigests
from orc.digests.prompt_digest import PromptDigests
from orc.digests.runner import DigestRunner
from orc.digests.sessions import SessionDigests
from orc.digests.signals import SessionSignals
from orc.digests.store import DigestStore
from orc.digests.summaries import DigestSummaries
from orc.documents.context_documents import ContextDocuments
from orc.documents.contexts import ContextDirectory
from orc.documents.document_chat import DocumentChatService
from orc.documents.extraction_pool import ExtractionPool
from orc.documents.file_cache import ProcessedFileCache
from orc.documents.intake import FileTexts
from orc.documents.leases import ProcessingLeases
from orc.documents.library import DocumentLibrary
from orc.documents.limits import ExtractionLimits
from orc.documents.processing import DocumentLocation, DocumentProcessor, ProcessingJob
from orc.documents.recovery import DocumentRecovery, sweep_interrupted_documents
from orc.documents.reprocessing import Reprocessor
from orc.documents.scopes import DocumentScopes
from orc.documents.search import IndexCache
from orc.documents.session_texts import SessionTexts
from orc.documents.sessions import SessionFiles
from orc.documents.text_store import TextStore
from orc.documents.vectors import SpanVectors, SpanVectorStore
from orc.graph import build_graph
from orc.handoff import Handoff, SessionArtifacts
from orc.handoff.redaction import Redactor
from orc.idempotency import IdempotencyKeys
from orc.jobs.messages import processing_message
from orc.jobs.worker import JobWorker
from orc.mcp_client import McpConnection
from orc.models.choice import ChosenModel, ModelChoice
from orc.models.embeddings import build_embedding_model
from orc.models.factory import build_chat_model, model_label
from orc.models.prompting import restore_prompts, use_prompts
from orc.models.tokens import token_counter_for
from orc.output_policy import OutputPolicy
from orc.principal import Principal
from orc.prompt_source import prompts_for
from orc.quotas import MAX_CONCURRENT_UPLOADS, OperationQuotas, Quotas, RateLimit
from orc.settings import Settings
from orc.storage.checkpoints import CollectionCheckpointSaver
from orc.storage.localfs import LocalBlobStore
from orc.storage.ports import BlobStore, CollectionProvider, DocumentCollection
from orc.storage.queues import InProcessJobQueue, JobQueue
from orc.storage.sqlite import SqliteCollectionProvider
from orc.storage.sqlite_checkpoints import open_embedded_checkpointer
from orc.storage.traced import TracedBlobStore, TracedCollectionProvider
from orc.telemetry import configure_telemetry, tracing_enabled
from orc.tool_contract import DOCUMENT_CHAT
from orc.turns.document_chat import AdmittedDocumentChat
from orc.turns.policy import UNLIMITED, QuotaPolicy, TurnPolicy
from orc.turns.prepare import TurnLimits, TurnPreparer
from orc.turns.runner import RunnerParts, TurnRunner
from orc.turns.service import Orchestrator

if TYPE_CHECKING:  # the Azure SDKs load only where Azure is configured
    from orc.storage.azure_blob import AzureBlobStore
    from orc.storage.azure_queue import AzureJobQueue
    from orc.storage.cosmos import CosmosCollectionProvider

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Stores:
    """The storage a process uses: named collections and one blob store."""

    collections: CollectionProvider
    blobs: BlobStore


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


@dataclass(frozen=True, slots=True)
class DocumentServices:
    """The document side of a process: what the MCP server's tools run on, and the server itself."""

    mcp: McpServices
    server: FastMCP
    session_files: SessionFiles
    documents: DocumentLibrary
    context_files: ContextFiles
    idempotency: IdempotencyKeys
    conversations: ConversationRepository
    stores: Stores
    model: BaseChatModel
    model_label: str
    jobs: JobWorker
    recovery: DocumentRecovery
    quotas: Quotas
    policy: TurnPolicy
    file_texts: FileTexts
    exports: Exports


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


def model_from_settings(
    settings: Settings, name: str | None = None, *, resources: AsyncExitStack | None = None
) -> BaseChatModel:
    """The chat model ``ORC_MODEL`` (or ``name``) names; what it holds open is closed with ``resources``."""
    return build_chat_model(
        name or settings.model,
        base_url=settings.model_base_url,
        api_key=settings.model_api_key.get_secret_value() if settings.model_api_key else None,
        timeout=settings.model_timeout_seconds,
        max_retries=settings.model_max_retries,
        resources=resources,
    )


async def span_vectors(settings: Settings, stack: AsyncExitStack, stores: Stores) -> SpanVectors | None:
    """Span vectors with the ``ORC_EMBEDDINGS`` model (none when it is ``off``); background embeddings stop
    with the stack, before the stores close."""
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
    vectors = SpanVectors(
        model,
        SpanVectorStore(await stores.collections.collection("document_text")),
        query_timeout=settings.embeddings_timeout_seconds,
    )
    stack.push_async_callback(vectors.aclose)
    return vectors


def digest_model_for(
    settings: Settings,
    chat_model: BaseChatModel,
    *,
    chat_model_given: bool,
    digest_model: BaseChatModel | None,
    resources: AsyncExitStack | None = None,
) -> BaseChatModel:
    """The model that makes context digests: ``digest_model``, else ``ORC_DIGEST_MODEL``, else the configured model.

    A chat model passed in code (``model=``) answers turns only; digests keep using the configured model, so a
    scripted turn model in a test or an embedding never receives background digest requests.
    """
    if digest_model is not None:
        return digest_model
    if settings.digest_model:
        return model_from_settings(settings, settings.digest_model, resources=resources)
    return model_from_settings(settings, resources=resources) if chat_model_given else chat_model


async def build_document_services(
    settings: Settings,
    stack: AsyncExitStack,
    *,
    model: BaseChatModel | None = None,
    stores: Stores | None = None,
    digest_model: BaseChatModel | None = None,
    job_queues: JobQueues | None = None,
    policy: TurnPolicy | None = None,
) -> DocumentServices:
    """Stores, model and the MCP server over the document services (also used by ``python -m mcp_server``).

    ``stores`` replaces the configured storage (e.g. in-memory stores for an embedded, throw-away use);
    ``digest_model`` the model that makes context digests (see :func:`digest_model_for`); ``job_queues`` the
    configured job queues (given queues mean queue mode: uploads enqueue, a worker processes); ``policy`` the
    configured turn policy (quotas, unlimited under ``ORC_AUTH=none``).
    """
    # ORC_PROMPTS_DIR: checked before anything else starts, in force until the runtime closes.
    prompts = await prompts_for(settings)
    if prompts is not None:
        stack.callback(restore_prompts, prompts, use_prompts(prompts))
    stores = stores if stores is not None else await open_stores(settings, stack)
    configure_telemetry(json_logs=settings.log_format == "json")
    if tracing_enabled():
        # One span per storage call; not wrapped when nothing records spans, so untraced processes pay nothing.
        stores = Stores(TracedCollectionProvider(stores.collections), TracedBlobStore(stores.blobs))
    chat_model = model if model is not None else model_from_settings(settings, resources=stack)
    label = model_label(chat_model)
    digests_by = digest_model_for(
        settings, chat_model, chat_model_given=model is not None, digest_model=digest_model, resources=stack
    )
    catalog = await stores.collections.collection("catalog")
    idempotency = IdempotencyKeys(await stores.collections.collection("idempotency"))
    conversations = ConversationRepository(await stores.collections.collection("conversations"))
    queues = job_queues if job_queues is not None else await open_job_queues(settings, stack)
    # Registered before the processor, so it stops after the jobs that use it.
    pool = extraction_pool(settings, stack)
    vectors = await span_vectors(settings, stack, stores)
    operations = await build_operation_quotas(settings, stores)
    quotas = await build_quotas(settings, stores)
    library, context, jobs, recovery = await _document_library(
        settings,
        stack,
        stores,
        catalog,
        digests_by,
        idempotency,
        conversations,
        queues,
        pool,
        vectors,
        operations,
        quotas,
    )
    document_chat = DocumentChatService(
        stores.blobs,
        ProcessedFileCache(settings.file_cache_ttl_seconds),
        chat_model,
        model_label=label,
        max_document_bytes=settings.max_upload_bytes,
        max_question_chars=settings.max_question_chars,
        max_documents=settings.max_blob_names,
        extraction_pool=pool,
        # What the document processor stored is read, not extracted again, and file ids hold across instances.
        texts=SessionTexts(
            library.session_files,
            TextStore(await stores.collections.collection("document_text")),
            library.indexes,
            vectors,
        ),
        vectors=vectors,
    )
    policy = policy if policy is not None else turn_policy(quotas)
    services = McpServices(
        # An MCP client's document_chat answer is a model call: admitted and charged like a turn.
        document_chat=AdmittedDocumentChat(document_chat, policy),
        max_question_chars=settings.max_question_chars,
        max_document_names=settings.max_blob_names,
        library=library,
    )
    return DocumentServices(
        mcp=services,
        server=build_mcp_server(services),
        session_files=library.session_files,
        documents=library,
        context_files=context,
        idempotency=idempotency,
        conversations=conversations,
        stores=stores,
        model=chat_model,
        model_label=label,
        jobs=jobs,
        recovery=recovery,
        quotas=quotas,
        policy=policy,
        file_texts=FileTexts(pool, max_upload_bytes=settings.max_upload_bytes, admission=operations),
        exports=Exports(pool, operations),
    )


async def _document_library(
    settings: Settings,
    stack: AsyncExitStack,
    stores: Stores,
    catalog: DocumentCollection,
    digest_model: BaseChatModel,
    idempotency: IdempotencyKeys,
    conversations: ConversationRepository,
    queues: JobQueues | None,
    pool: ExtractionPool,
    vectors: SpanVectors | None,
    uploads: OperationQuotas,
    quotas: Quotas,
) -> tuple[DocumentLibrary, ContextFiles, JobWorker, DocumentRecovery]:
    """Contexts, session and context documents, the processing pipeline, the search index cache and digests."""
    texts = TextStore(await stores.collections.collection("document_text"))
    indexes = IndexCache()
    # In-process mode keeps today's asyncio tasks; its worker has queues nobody writes to (and nothing to do).
    documents_queue = queues.documents if queues is not None else InProcessJobQueue()
    digests_queue = queues.digests if queues is not None else InProcessJobQueue()

    async def dispatch(job: ProcessingJob) -> None:
        await documents_queue.enqueue(processing_message(job))

    leases = ProcessingLeases(
        await stores.collections.collection("processing_leases"), lease_seconds=settings.processing_lease_seconds
    )
    processor = DocumentProcessor(
        catalog,
        stores.blobs,
        texts,
        indexes,
        max_document_bytes=settings.max_upload_bytes,
        dispatch=dispatch if queues is not None else None,
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
    digest_store = DigestStore(await stores.collections.collection("digests"))
    runner = DigestRunner(digest_model)
    file_digests = FileDigests(catalog, texts, digest_store, runner, max_concurrency=settings.digest_concurrency)
    session_digests = SessionDigests(files, file_digests, digest_store, runner, SessionSignals(), admission=quotas)
    files.listen(session_digests)
    summaries = DigestSummaries(catalog, session_digests, file_digests)
    # Registered after the processor, so digests stop (and leave their work "stale") before it and the stores do.
    stack.push_async_callback(session_digests.aclose)
    stack.push_async_callback(summaries.aclose)
    context = ContextFiles(files, session_digests, digest_store)
    jobs = JobWorker(
        catalog,
        processor,
        session_digests,
        documents_queue,
        digests_queue,
        visibility_seconds=settings.queue_visibility_seconds,
        max_deliveries=settings.queue_max_deliveries,
    )
    library = DocumentLibrary(
        scopes=DocumentScopes(
            directory=directory,
            context_documents=ContextDocuments(
                catalog,
                stores.blobs,
                directory,
                processor,
                texts,
                max_upload_bytes=settings.max_upload_bytes,
                admission=uploads,
            ),
            session_files=files,
            conversations=conversations,
        ),
        texts=texts,
        indexes=indexes,
        reprocessor=Reprocessor(catalog, processor),
        summaries=summaries,
        vectors=vectors,
    )

    def digest_again(location: DocumentLocation, record: Mapping[str, Any]) -> None:
        # A session file whose processing a crash interrupted gets its digests made once it is processed.
        if record.get("kind") == "session_file" and isinstance(record.get("conversation_id"), str):
            organization, _, user = location.partition_key.partition("/")
            session_digests.schedule(Principal(organization=organization, user=user), record["conversation_id"])

    recovery = DocumentRecovery(leases, catalog, stores.blobs, processor, on_resumed=digest_again)
    return library, context, jobs, recovery


def in_memory_mcp(server: FastMCP) -> McpConnection:
    """The process's one in-memory session to the MCP server; each call names its turn's principal."""

    @asynccontextmanager
    async def connect() -> AsyncIterator[ClientSession]:
        # Set in the session's own task, so only the server task started here trusts principals in _meta.
        in_process_session.set(True)
        async with create_connected_server_and_client_session(server) as session:
            yield session

    return McpConnection(connect)


async def _checkpointer(settings: Settings, stores: Stores, stack: AsyncExitStack) -> BaseCheckpointSaver[str]:
    """LangGraph's SQLite saver in ``ORC_HOME`` when embedded; checkpoints in the collection store otherwise."""
    if settings.storage == "embedded":
        # Off the event loop: a file-system call there stalls every other request (and `langgraph dev` refuses it).
        await asyncio.to_thread(settings.home.mkdir, parents=True, exist_ok=True)
        return await stack.enter_async_context(open_embedded_checkpointer(settings.home / "checkpoints.sqlite3"))
    return CollectionCheckpointSaver(await stores.collections.collection("checkpoints"))


def _allowed_models(settings: Settings, stack: AsyncExitStack) -> dict[str, ChosenModel]:
    """The models of ``ORC_MODELS``, built once (building opens no connection); closed with the process."""
    allowed = {}
    for alias, spec in settings.models.items():
        model = model_from_settings(settings, spec, resources=stack)
        allowed[alias] = ChosenModel(model, model_label(model))
    return allowed


@dataclass(frozen=True, slots=True)
class Services:
    """A built process: every service its entry points use, each built once by :func:`build_runtime`.

    Nothing here is optional: a process built from settings has all of them. The HTTP app gets this object
    through its dependencies, the CLI and ``mcp_server`` take it directly.
    """

    settings: Settings
    stores: Stores
    orchestrator: Orchestrator
    """Turns (ask, stream) and conversations (list, get, delete)."""
    model_label: str
    """The turn model's label, as answers' metadata name it (``offline-extractive``, ``azure:gpt-4o``...)."""
    conversations: ConversationRepository
    """Conversation history (read-only use outside the orchestrator, e.g. a session's title)."""
    session_files: SessionFiles
    """The files attached to each conversation."""
    documents: DocumentLibrary
    """Contexts, context documents and the document tools' operations."""
    context_files: ContextFiles
    """The ``/api/sessions/{id}/context…`` service: a session's files with their digests."""
    idempotency: IdempotencyKeys
    """``Idempotency-Key`` records of mutating requests."""
    mcp_server: FastMCP
    """The MCP server the orchestrator talks to in memory (dotted tool names, always)."""
    published_mcp_server: FastMCP
    """The MCP server ``/api/mcp`` serves: :attr:`mcp_server` itself, or one with the same tools spelled as
    ``ORC_MCP_TOOL_NAMES=underscore`` asks (the orchestrator keeps the dotted one)."""
    quotas: Quotas
    """Per-principal rate limit, daily token quota and concurrent-turn cap (all off under ``ORC_AUTH=none``)."""
    policy: TurnPolicy
    """What admits and charges every turn (over :attr:`quotas`; unlimited under ``ORC_AUTH=none``)."""
    handoff: Handoff
    """The context requests of paused turns (the turn service resumes them)."""
    jobs: JobWorker
    """The queue worker (``orc worker``, the queue-triggered functions); idle with in-process jobs."""
    recovery: DocumentRecovery
    """Resumes or fails uploads and processing a crash interrupted (swept in the background when embedded)."""
    artifacts: SessionArtifacts
    """What a session offers to supply to a context request: documents, digest facts, earlier answers."""
    file_texts: FileTexts
    """The text of files supplied to a context request: checked, admitted and parsed like uploads."""


@asynccontextmanager
async def build_runtime(
    settings: Settings | None = None,
    *,
    model: BaseChatModel | None = None,
    stores: Stores | None = None,
    mcp_extensions: Sequence[Callable[[FastMCP], None]] = (),
    digest_model: BaseChatModel | None = None,
    job_queues: JobQueues | None = None,
    policy: TurnPolicy | None = None,
) -> AsyncIterator[Services]:
    """Build every service ``settings`` (default: the environment) describes; close it all on exit.

    ``model`` replaces the configured model for turns (tests pass a scripted one); ``digest_model`` the model
    that makes context digests; ``stores`` the configured storage; ``job_queues`` the configured job queues;
    ``policy`` the turn policy (default: quotas from settings); each of ``mcp_extensions`` registers extra tools
    on the MCP server (the model may plan calls to them).
    """
    settings = settings or Settings()
    async with AsyncExitStack() as stack:
        services = await build_document_services(
            settings,
            stack,
            model=model,
            stores=stores,
            digest_model=digest_model,
            job_queues=job_queues,
            policy=policy,
        )
        for extend in mcp_extensions:
            extend(services.server)
        published = services.server
        if settings.mcp_tool_names != "dotted":
            published = build_mcp_server(services.mcp, tool_names=settings.mcp_tool_names)
            for extend in mcp_extensions:
                extend(published)
        checkpointer = await _checkpointer(settings, services.stores, stack)
        # One redactor for what a context request offers: suggestions and the artifacts listing alike.
        redactor = Redactor(settings.redact_patterns)
        tools = await services.server.list_tools()
        connection = in_memory_mcp(services.server)
        stack.push_async_callback(connection.aclose)
        handoff = Handoff(
            ContextRequests(
                await services.stores.collections.collection("context_requests"),
                await services.stores.collections.collection("context_request_deadlines"),
            ),
            services.conversations,
            services.documents,
            default_mode=settings.context_requests,
            timeout_seconds=settings.context_request_timeout,
            redactor=redactor,
            reminder=settings.context_request_reminder,
        )
        titles = TitleWriter(services.conversations) if settings.generated_titles else None
        models = ModelChoice(
            default=ChosenModel(services.model, services.model_label), allowed=_allowed_models(settings, stack)
        )
        limits = turn_limits(settings)
        output_policy = OutputPolicy.allowing(settings.output_image_hosts)
        orchestrator = Orchestrator(
            preparer=TurnPreparer(
                limits=limits,
                models=models,
                files=services.session_files,
                documents=services.documents,
                default_mode=handoff.default_mode,
            ),
            runner=TurnRunner(
                RunnerParts(
                    graph=build_graph(checkpointer),
                    conversations=services.conversations,
                    mcp=connection,
                    offers_planning_tools=any(tool.name != DOCUMENT_CHAT for tool in tools),
                    limits=limits,
                    # Chosen once here, off the event loop: loading a tiktoken encoding reads files.
                    token_counter=await asyncio.to_thread(token_counter_for, services.model_label),
                    titles=titles,
                    handoff=handoff,
                    session_digest=PromptDigests(services.context_files).text,
                    output_policy=output_policy,
                )
            ),
            policy=services.policy,
            handoff=handoff,
            conversations=services.conversations,
            files=services.session_files,
            delete_checkpoints=checkpointer.adelete_thread,
            titles=titles,
            output_policy=output_policy,
            exports=services.exports,
        )
        # Titles still being written finish before the stores they write to close.
        stack.push_async_callback(orchestrator.settle)
        if settings.jobs == "inprocess":
            # Embedded: this process answers paused turns whose deadline passed (on Azure a timer function does).
            sweeper = asyncio.create_task(sweep_context_requests(orchestrator, settings.context_sweep_seconds))
            stack.push_async_callback(_stop, sweeper)
        # Uploads and processing a crash interrupted (here or on another instance) are resumed or failed; with
        # queues on Azure a timer function sweeps instead, and `orc worker` does.
        if settings.jobs == "inprocess":
            recovering = asyncio.create_task(
                sweep_interrupted_documents(services.recovery, settings.processing_sweep_seconds)
            )
            stack.push_async_callback(_stop, recovering)
        yield Services(
            settings=settings,
            stores=services.stores,
            orchestrator=orchestrator,
            model_label=services.model_label,
            conversations=services.conversations,
            session_files=services.session_files,
            documents=services.documents,
            context_files=services.context_files,
            idempotency=services.idempotency,
            mcp_server=services.server,
            quotas=services.quotas,
            policy=services.policy,
            handoff=handoff,
            jobs=services.jobs,
            recovery=services.recovery,
            published_mcp_server=published,
            artifacts=SessionArtifacts(
                library=services.documents,
                context_files=services.context_files,
                conversations=services.conversations,
                redactor=redactor,
            ),
            file_texts=services.file_texts,
        )


def turn_limits(settings: Settings) -> TurnLimits:
    """The bounds of every turn, from settings (built once per process)."""
    return TurnLimits(
        max_question_chars=settings.max_question_chars,
        max_blob_names=settings.max_blob_names,
        max_tool_rounds=settings.max_tool_rounds,
        history_tokens=settings.history_tokens,
        sources_tokens=settings.sources_tokens,
        turn_timeout_seconds=settings.turn_timeout,
    )


def turn_policy(quotas: Quotas) -> TurnPolicy:
    """Quotas admit and charge turns; with no limit configured (always under ``ORC_AUTH=none``: one local user)
    nothing is counted and no turn waits at a gate."""
    return QuotaPolicy(quotas) if quotas.enabled else UNLIMITED


async def build_operation_quotas(settings: Settings, stores: Stores) -> OperationQuotas:
    """Uploads (files, bytes) and exports per principal per window; none under ``ORC_AUTH=none`` (as
    :func:`build_quotas`)."""
    if settings.auth == "none":
        return OperationQuotas(None, files=None, max_bytes=None)
    mb = settings.upload_mb_per_window
    return OperationQuotas(
        await stores.collections.collection("quotas"),
        files=RateLimit.parse(settings.upload_rate),
        max_bytes=None if mb is None else mb << 20,
        exports=RateLimit.parse(settings.export_rate),
        max_concurrent_uploads=MAX_CONCURRENT_UPLOADS,
    )


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


@asynccontextmanager
async def build_orchestrator(
    settings: Settings | None = None,
    *,
    model: BaseChatModel | None = None,
    stores: Stores | None = None,
    mcp_extensions: Sequence[Callable[[FastMCP], None]] = (),
    digest_model: BaseChatModel | None = None,
) -> AsyncIterator[Orchestrator]:
    """The orchestrator for ``settings`` (default: the environment), closed with everything it uses on exit."""
    async with build_runtime(
        settings, model=model, stores=stores, mcp_extensions=mcp_extensions, digest_model=digest_model
    ) as services:
        yield services.orchestrator


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


async def sweep_context_requests(orchestrator: Orchestrator, every_seconds: float) -> None:
    """Answer, without their context, paused turns past their deadline, every ``every_seconds``."""
    while True:
        await asyncio.sleep(every_seconds)
        try:
            await orchestrator.expire_due()
        except Exception as exc:  # storage hiccup: the next sweep tries again
            logger.warning("sweeping context requests failed: %s", type(exc).__name__)


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


class SharedRuntime:
    """Services built on first use and kept for the life of the process, for entry points with no lifespan.

    The queue-triggered functions of ``function_app.py`` use it: the Python worker has no startup or shutdown
    hook for them (azure-functions-python-worker issue 1904), so the first job builds the runtime and the
    process's end releases it. Concurrent first jobs build it once.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self._settings = settings
        self._stack = AsyncExitStack()
        self._services: Services | None = None
        self._building: asyncio.Lock | None = None

    async def get(self) -> Services:
        """The services, built by the first caller."""
        if self._services is None:
            self._building = self._building or asyncio.Lock()
            async with self._building:
                if self._services is None:
                    self._services = await self._stack.enter_async_context(build_runtime(self._settings))
        return self._services

    async def aclose(self) -> None:
        """Close what :meth:`get` built (embedders and tests; the next :meth:`get` builds again)."""
        self._services = None
        await self._stack.aclose()
        self._stack = AsyncExitStack()
