"""The one composition root: settings in, the process's :class:`Services` (stores, model, MCP server, graph) out.

Built in layers: the :class:`~orc.composition.Foundation` (stores and what is served from them without a model),
then the document services (model, digests, document tools, MCP server), then the turn service. A command that only
reads what is stored opens the foundation alone (:func:`orc.composition.open_foundation`).

Nothing here runs at import time; everything is built inside :func:`build_runtime` and closed when its context
exits. Entry points (HTTP, CLI, MCP transports, ``function_app.py``) take :class:`Services` and use the service
they need; none reaches through the orchestrator, which answers turns and deletes conversations only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from mcp.server.fastmcp import FastMCP

from mcp_server.server import build_mcp_server
from orc.admission import Admission
from orc.composition.documents import (
    DocumentServices,
    build_document_services,
    in_memory_mcp,
    model_from_settings,
    summaries_of,
)
from orc.composition.foundation import Foundation, build_foundation, parts_of
from orc.composition.stores import JobQueues, Stores
from orc.composition.tuning import TUNED, Tuning
from orc.conversations.title_writer import TitleWriter
from orc.digests.prompt_digest import PromptDigests
from orc.documents.intake.recovery import sweep_interrupted_documents
from orc.graph import build_graph
from orc.handoff import Handoff, SessionArtifacts
from orc.handoff.redaction import Redactor
from orc.models.choice import ChosenModel, ModelChoice
from orc.models.factory import model_label
from orc.models.tokens import token_counter_for
from orc.periodic import every
from orc.settings import Settings
from orc.storage.checkpoints import CollectionCheckpointSaver
from orc.storage.sqlite_checkpoints import open_embedded_checkpointer
from orc.tool_contract import DOCUMENT_CHAT, HTTP_TOOL_NAMES
from orc.turns.prepare import TurnLimits, TurnPreparer
from orc.turns.runner import RunnerParts, TurnRunner
from orc.turns.service import Orchestrator

logger = logging.getLogger(__name__)


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

    def warm(self) -> asyncio.Task[None] | None:
        """Start in the background what a serving process's first upload would otherwise wait for: a document
        extraction worker (when documents are parsed in workers); the start under way, if any. For processes that
        serve (``orc serve``, the Functions app, ``orc worker``); a one-off command that may never parse a document
        leaves it."""
        return self.foundation._parts.pool.warm()


@asynccontextmanager
async def build_runtime(
    settings: Settings | None = None,
    *,
    model: BaseChatModel | None = None,
    stores: Stores | None = None,
    mcp_extensions: Sequence[Callable[[FastMCP], None]] = (),
    digest_model: BaseChatModel | None = None,
    job_queues: JobQueues | None = None,
    admission: Admission | None = None,
    tuning: Tuning = TUNED,
) -> AsyncIterator[Services]:
    """Build every service ``settings`` (default: the environment) describes; close it all on exit.

    ``model`` replaces the configured model for turns (tests pass a scripted one); ``digest_model`` the model
    that makes context digests; ``stores`` the configured storage; ``job_queues`` the configured job queues
    (given queues mean queue mode: uploads enqueue, a worker processes); ``admission`` what admits every operation
    (default: the limits of settings); ``tuning`` the process's constants (:mod:`orc.composition.tuning`); each of
    ``mcp_extensions`` registers extra tools on the MCP server (the model may plan calls to them).
    """
    settings = settings or Settings()
    async with AsyncExitStack() as stack:
        base = await build_foundation(
            settings, stack, stores=stores, job_queues=job_queues, tuning=tuning, admission=admission
        )
        documents = await build_document_services(settings, stack, base, model=model, digest_model=digest_model)
        published = _published_server(settings, documents, mcp_extensions)
        # One redactor for what a context request offers: suggestions and the artifacts listing alike.
        redactor = Redactor(settings.redact_patterns)
        handoff = Handoff(
            base.context_requests,
            base.conversations,
            documents.library,
            default_mode=settings.context_requests,
            timeout_seconds=settings.context_request_timeout,
            redactor=redactor,
            reminder=settings.context_request_reminder,
        )
        orchestrator = await _turns(settings, stack, base, documents, handoff)
        if settings.jobs == "inprocess":
            # Embedded: this process answers paused turns whose deadline passed (on Azure a timer function does).
            sweeper = asyncio.create_task(
                sweep_context_requests(orchestrator, tuning.context_sweep(settings.context_request_timeout))
            )
            stack.push_async_callback(_stop, sweeper)
            # Uploads and processing a crash interrupted (here or on another instance) are resumed or failed; with
            # queues on Azure a timer function sweeps instead, and `orc worker` does.
            recovering = asyncio.create_task(
                sweep_interrupted_documents(documents.recovery, tuning.processing_sweep_seconds)
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


def _published_server(
    settings: Settings, documents: DocumentServices, mcp_extensions: Sequence[Callable[[FastMCP], None]]
) -> FastMCP:
    """The MCP server ``/api/mcp`` serves, each extension registered on it and on the documents' own server."""
    for extend in mcp_extensions:
        extend(documents.server)
    form = settings.mcp_tool_names or HTTP_TOOL_NAMES
    if form == "dotted":
        return documents.server
    published = build_mcp_server(documents.mcp, tool_names=form)
    for extend in mcp_extensions:
        extend(published)
    return published


async def _turns(
    settings: Settings, stack: AsyncExitStack, base: Foundation, documents: DocumentServices, handoff: Handoff
) -> Orchestrator:
    """The turn service: its graph over the in-memory MCP session, its runner and its preparer."""
    checkpointer = await _checkpointer(settings, parts_of(base).stores, stack)
    tools = await documents.server.list_tools()
    connection = in_memory_mcp(documents.server)
    stack.push_async_callback(connection.aclose)
    titles = TitleWriter(base.conversations) if settings.generated_titles else None
    models = ModelChoice(
        default=ChosenModel(documents.model, documents.model_label), allowed=_allowed_models(settings, stack)
    )
    limits = turn_limits(settings, parts_of(base).tuning)
    runner = TurnRunner(
        RunnerParts(
            graph=build_graph(checkpointer),
            conversations=base.conversations,
            mcp=connection,
            offers_planning_tools=any(tool.name != DOCUMENT_CHAT for tool in tools),
            limits=limits,
            # Chosen once here, off the event loop: loading a tiktoken encoding reads files.
            token_counter=await asyncio.to_thread(
                token_counter_for, documents.model_label, tiktoken=models.default.capabilities.counted_with_tiktoken
            ),
            titles=titles,
            handoff=handoff,
            session_digest=PromptDigests(documents.context_files).text,
            file_summaries=summaries_of(documents.library),
            output_policy=base.output_policy,
        )
    )
    if titles is not None:
        # Titles under way finish before the stores they write to close; those still waiting are given up.
        stack.push_async_callback(titles.aclose)
    # Answered turns still being stored finish first: before the titles they start and the stores close.
    stack.push_async_callback(runner.aclose)
    return Orchestrator(
        preparer=TurnPreparer(
            limits=limits,
            models=models,
            files=base.session_files,
            scopes=base.scopes,
            default_mode=handoff.default_mode,
        ),
        runner=runner,
        admission=documents.admission,
        handoff=handoff,
        conversations=base.conversations,
        files=base.session_files,
        delete_checkpoints=checkpointer.adelete_thread,
        titles=titles,
    )


def turn_limits(settings: Settings, tuning: Tuning = TUNED) -> TurnLimits:
    """The bounds of every turn, from settings (built once per process)."""
    return TurnLimits(
        max_question_chars=settings.max_question_chars,
        max_blob_names=settings.max_blob_names,
        max_tool_rounds=tuning.max_tool_rounds,
        history_tokens=settings.history_tokens,
        sources_tokens=settings.sources_tokens,
        turn_timeout_seconds=settings.turn_timeout,
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
