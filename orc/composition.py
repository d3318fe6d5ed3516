"""The one composition root: settings in, the process's :class:`Services` (stores, model, MCP server, graph) out.

Built in layers: the :class:`~orc.foundation.Foundation` (stores and what is served from them without a model),
then the document services (model, digests, document tools, MCP server), then the turn service. A command that only
reads what is stored opens the foundation alone (:func:`orc.foundation.open_foundation`).

Nothing here runs at import time; everything is built inside :func:`build_runtime` and closed when its context
exits. Entry points (HTTP, CLI, MCP transports, ``function_app.py``) take :class:`Services` and use the service
they need; none reaches through the orchestrator, which answers turns and deletes conversations only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from mcp import ClientSession
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session

from mcp_server.scope import in_process_session
from mcp_server.server import build_mcp_server
from mcp_server.services import McpServices
from orc.conversations.title_writer import TitleWriter
from orc.digests.context import ContextFiles
from orc.digests.files import FileDigests
from orc.digests.prompt_digest import PromptDigests
from orc.digests.runner import DigestRunner
from orc.digests.sessions import SessionDigests
from orc.digests.signals import SessionSignals
from orc.digests.store import DigestStore
from orc.digests.summaries import DigestSummaries
from orc.documents.catalog.library import DocumentLibrary
from orc.documents.catalog.reprocessing import Reprocessor
from orc.documents.catalog.summaries import FileSummaries, SummaryWithSources
from orc.documents.chat.document_chat import DocumentChatService
from orc.documents.chat.file_cache import ProcessedFileCache
from orc.documents.chat.session_texts import SessionTexts
from orc.documents.intake.processing import DocumentLocation
from orc.documents.intake.recovery import DocumentRecovery, sweep_interrupted_documents
from orc.foundation import Foundation, JobQueues, Stores, build_foundation
from orc.graph import build_graph
from orc.handoff import Handoff, SessionArtifacts
from orc.handoff.redaction import Redactor
from orc.jobs.worker import JobWorker
from orc.mcp_client import McpConnection
from orc.models.choice import ChosenModel, ModelChoice
from orc.models.factory import build_chat_model, model_label
from orc.models.prompting import restore_prompts, use_prompts
from orc.models.summaries import MAX_FACTS as SUMMARY_FACTS
from orc.models.tokens import token_counter_for
from orc.periodic import every
from orc.principal import Principal
from orc.prompt_source import prompts_for
from orc.quotas import Quotas
from orc.settings import Settings
from orc.storage.checkpoints import CollectionCheckpointSaver
from orc.storage.sqlite_checkpoints import open_embedded_checkpointer
from orc.tool_contract import DOCUMENT_CHAT, HTTP_TOOL_NAMES
from orc.turns.document_chat import AdmittedDocumentChat
from orc.turns.policy import UNLIMITED, QuotaPolicy, TurnPolicy
from orc.turns.prepare import TurnLimits, TurnPreparer
from orc.turns.runner import RunnerParts, TurnRunner
from orc.turns.service import Orchestrator

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class DocumentServices:
    """The document side of a process, over its :class:`~orc.foundation.Foundation`: the model, the digests, the
    document tools and the MCP server those tools are served by."""

    mcp: McpServices
    """What the MCP server's tools run on."""
    server: FastMCP
    """The MCP server (dotted tool names, always)."""
    library: DocumentLibrary
    """The ``documents.*`` tool operations over what a scope makes available."""
    context_files: ContextFiles
    """The ``/api/sessions/{id}/context…`` service: a session's files with their digests."""
    digests: SessionDigests
    """Makes the per-file and aggregate digests of each session's files in the background."""
    model: BaseChatModel
    """The configured chat model (the default of every turn, and document_chat's)."""
    model_label: str
    """The model's label, as answers' metadata name it (``offline-extractive``, ``azure:gpt-4o``...)."""
    jobs: JobWorker
    """The queue worker (``orc worker``, the queue-triggered functions); idle with in-process jobs."""
    recovery: DocumentRecovery
    """Resumes or fails uploads and processing a crash interrupted (swept in the background when embedded)."""
    quotas: Quotas
    """Per-principal rate limit, daily token quota and concurrent-turn cap (all off under ``ORC_AUTH=none``)."""
    policy: TurnPolicy
    """What admits and charges every turn and document_chat answer (unlimited under ``ORC_AUTH=none``)."""


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
    base: Foundation,
    *,
    model: BaseChatModel | None = None,
    digest_model: BaseChatModel | None = None,
    policy: TurnPolicy | None = None,
) -> DocumentServices:
    """The model, digests, document tools and the MCP server over the foundation ``base`` (also used by
    ``python -m mcp_server``); closed with ``stack``.

    ``model`` replaces the configured model; ``digest_model`` the model that makes context digests (see
    :func:`digest_model_for`); ``policy`` the configured turn policy (quotas, unlimited under ``ORC_AUTH=none``).
    """
    # ORC_PROMPTS_DIR: checked before any model is built, in force until the runtime closes.
    prompts = await prompts_for(settings)
    if prompts is not None:
        stack.callback(restore_prompts, prompts, use_prompts(prompts))
    chat_model = model if model is not None else model_from_settings(settings, resources=stack)
    label = model_label(chat_model)
    digests_by = digest_model_for(
        settings, chat_model, chat_model_given=model is not None, digest_model=digest_model, resources=stack
    )
    quotas = base.quotas
    digests, context, summaries = await _digests(settings, stack, base, digests_by, quotas)
    library = DocumentLibrary(
        scopes=base.scopes,
        texts=base.texts,
        retriever=base.retriever,
        reprocessor=Reprocessor(base.catalog, base.processor),
        summaries=summaries,
    )
    document_chat = DocumentChatService(
        base.stores.blobs,
        ProcessedFileCache(settings.file_cache_ttl_seconds),
        chat_model,
        retriever=base.retriever,
        model_label=label,
        max_document_bytes=settings.max_upload_bytes,
        max_question_chars=settings.max_question_chars,
        max_documents=settings.max_blob_names,
        extraction_pool=base.pool,
        # What the document processor stored is read, not extracted again, and file ids hold across instances.
        texts=SessionTexts(base.session_files),
        summaries=summaries_of(library),
    )
    policy = policy if policy is not None else turn_policy(quotas)
    services = McpServices(
        # An MCP client's document_chat answer is a model call: admitted and charged like a turn.
        document_chat=AdmittedDocumentChat(document_chat, policy),
        max_question_chars=settings.max_question_chars,
        max_document_names=settings.max_blob_names,
        library=library,
        scopes=base.scopes,
        session_files=base.session_files,
        directory=base.directory,
    )

    def digest_again(location: DocumentLocation, record: Mapping[str, Any]) -> None:
        # A session file whose processing a crash interrupted gets its digests made once it is processed.
        if record.get("kind") == "session_file" and isinstance(record.get("conversation_id"), str):
            organization, _, user = location.partition_key.partition("/")
            digests.schedule(Principal(organization=organization, user=user), record["conversation_id"])

    return DocumentServices(
        mcp=services,
        server=build_mcp_server(services),
        library=library,
        context_files=context,
        digests=digests,
        model=chat_model,
        model_label=label,
        jobs=JobWorker(
            base.catalog,
            base.processor,
            digests,
            base.queues.documents,
            base.queues.digests,
            visibility_seconds=settings.queue_visibility_seconds,
            max_deliveries=settings.queue_max_deliveries,
        ),
        recovery=DocumentRecovery(
            base.leases, base.catalog, base.stores.blobs, base.processor, on_resumed=digest_again
        ),
        quotas=quotas,
        policy=policy,
    )


async def _digests(
    settings: Settings, stack: AsyncExitStack, base: Foundation, digest_model: BaseChatModel, quotas: Quotas
) -> tuple[SessionDigests, ContextFiles, DigestSummaries]:
    """The digests of the foundation's session files, the context-files service over them, and document summaries."""
    files, catalog = base.session_files, base.catalog
    store = DigestStore(await base.stores.collections.collection("digests"))
    runner = DigestRunner(digest_model)
    file_digests = FileDigests(catalog, base.texts, store, runner, max_concurrency=settings.digest_concurrency)
    digests = SessionDigests(files, file_digests, store, runner, SessionSignals(), admission=quotas)
    files.listen(digests)
    summaries = DigestSummaries(catalog, digests, file_digests)
    # Registered after the processor, so digests stop (and leave their work "stale") before it and the stores do.
    stack.push_async_callback(digests.aclose)
    stack.push_async_callback(summaries.aclose)
    return digests, ContextFiles(files, digests, store), summaries


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


def summaries_of(library: DocumentLibrary) -> FileSummaries:
    """What a summary request reads ("Summarize lease.md"): the files' stored digests, through the library."""

    async def read(
        principal: Principal, session_id: str, focus: tuple[str, str] | None, names: Sequence[str]
    ) -> list[SummaryWithSources]:
        return await library.summaries_for_turn(principal, session_id, focus, names, facts=SUMMARY_FACTS)

    return read


def _allowed_models(settings: Settings, stack: AsyncExitStack) -> dict[str, ChosenModel]:
    """The models of ``ORC_MODELS``, built once (building opens no connection); closed with the process."""
    allowed = {}
    for alias, spec in settings.models.items():
        model = model_from_settings(settings, spec, resources=stack)
        allowed[alias] = ChosenModel(model, model_label(model))
    return allowed


@dataclass(frozen=True, slots=True)
class Services:
    """A built process, in its layers, each built once by :func:`build_runtime`.

    Nothing here is optional: a process built from settings has all of them. The HTTP app gets this object
    through its dependencies, the CLI and ``function_app.py`` take it directly.
    """

    foundation: Foundation
    """The settings, the stores and what is served from them without a model (sessions, files, contexts...)."""
    documents: DocumentServices
    """The model, the digests, the document tools and the MCP server over the foundation."""
    orchestrator: Orchestrator
    """Turns (ask, stream, resume) and deleting a conversation."""
    published_mcp_server: FastMCP
    """The MCP server ``/api/mcp`` serves: the documents' server itself, or one with the same tools spelled as
    ``ORC_MCP_TOOL_NAMES=underscore`` asks (the orchestrator keeps the dotted one)."""
    handoff: Handoff
    """The context requests of paused turns (the turn service resumes them)."""
    artifacts: SessionArtifacts
    """What a session offers to supply to a context request: documents, digest facts, earlier answers."""


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
    that makes context digests; ``stores`` the configured storage; ``job_queues`` the configured job queues
    (given queues mean queue mode: uploads enqueue, a worker processes); ``policy`` the turn policy (default:
    quotas from settings); each of ``mcp_extensions`` registers extra tools on the MCP server (the model may plan
    calls to them).
    """
    settings = settings or Settings()
    async with AsyncExitStack() as stack:
        base = await build_foundation(settings, stack, stores=stores, job_queues=job_queues)
        documents = await build_document_services(
            settings, stack, base, model=model, digest_model=digest_model, policy=policy
        )
        for extend in mcp_extensions:
            extend(documents.server)
        published = documents.server
        form = settings.mcp_tool_names or HTTP_TOOL_NAMES
        if form != "dotted":
            published = build_mcp_server(documents.mcp, tool_names=form)
            for extend in mcp_extensions:
                extend(published)
        checkpointer = await _checkpointer(settings, base.stores, stack)
        # One redactor for what a context request offers: suggestions and the artifacts listing alike.
        redactor = Redactor(settings.redact_patterns)
        tools = await documents.server.list_tools()
        connection = in_memory_mcp(documents.server)
        stack.push_async_callback(connection.aclose)
        handoff = Handoff(
            base.context_requests,
            base.conversations,
            documents.library,
            default_mode=settings.context_requests,
            timeout_seconds=settings.context_request_timeout,
            redactor=redactor,
            reminder=settings.context_request_reminder,
        )
        titles = TitleWriter(base.conversations) if settings.generated_titles else None
        models = ModelChoice(
            default=ChosenModel(documents.model, documents.model_label), allowed=_allowed_models(settings, stack)
        )
        limits = turn_limits(settings)
        runner = TurnRunner(
            RunnerParts(
                graph=build_graph(checkpointer),
                conversations=base.conversations,
                mcp=connection,
                offers_planning_tools=any(tool.name != DOCUMENT_CHAT for tool in tools),
                limits=limits,
                # Chosen once here, off the event loop: loading a tiktoken encoding reads files.
                token_counter=await asyncio.to_thread(
                    token_counter_for,
                    documents.model_label,
                    tiktoken=models.default.capabilities.counted_with_tiktoken,
                ),
                titles=titles,
                handoff=handoff,
                session_digest=PromptDigests(documents.context_files).text,
                file_summaries=summaries_of(documents.library),
                output_policy=base.output_policy,
            )
        )
        orchestrator = Orchestrator(
            preparer=TurnPreparer(
                limits=limits,
                models=models,
                files=base.session_files,
                scopes=base.scopes,
                default_mode=handoff.default_mode,
            ),
            runner=runner,
            policy=documents.policy,
            handoff=handoff,
            conversations=base.conversations,
            files=base.session_files,
            delete_checkpoints=checkpointer.adelete_thread,
            titles=titles,
        )
        if titles is not None:
            # Titles under way finish before the stores they write to close; those still waiting are given up.
            stack.push_async_callback(titles.aclose)
        # Answered turns still being stored finish first: before the titles they start and the stores close.
        stack.push_async_callback(runner.aclose)
        if settings.jobs == "inprocess":
            # Embedded: this process answers paused turns whose deadline passed (on Azure a timer function does).
            sweeper = asyncio.create_task(sweep_context_requests(orchestrator, settings.context_sweep_seconds))
            stack.push_async_callback(_stop, sweeper)
            # Uploads and processing a crash interrupted (here or on another instance) are resumed or failed; with
            # queues on Azure a timer function sweeps instead, and `orc worker` does.
            recovering = asyncio.create_task(
                sweep_interrupted_documents(documents.recovery, settings.processing_sweep_seconds)
            )
            stack.push_async_callback(_stop, recovering)
        yield Services(
            foundation=base,
            documents=documents,
            orchestrator=orchestrator,
            published_mcp_server=published,
            handoff=handoff,
            artifacts=SessionArtifacts(
                scopes=base.scopes,
                context_files=documents.context_files,
                conversations=base.conversations,
                redactor=redactor,
            ),
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


async def sweep_context_requests(orchestrator: Orchestrator, every_seconds: float) -> None:
    """Answer, without their context, paused turns past their deadline, every ``every_seconds``, until cancelled."""
    await every(
        every_seconds, orchestrator.expire_due, failure="sweeping context requests failed", log=logger, at_once=False
    )


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
