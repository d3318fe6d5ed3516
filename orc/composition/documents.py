"""The document side of a process over its foundation: the model, the digests, the document tools and the MCP
server they are served by (``python -m mcp_server`` builds this far)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from mcp import ClientSession
from mcp.server.fastmcp import FastMCP
from mcp.shared.memory import create_connected_server_and_client_session

from mcp_server.scope import in_process_session
from mcp_server.server import build_mcp_server
from mcp_server.services import McpServices
from orc.admission import Admission
from orc.composition.foundation import Foundation, parts_of
from orc.digests.context import ContextFiles
from orc.digests.files import FileDigests
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
from orc.documents.intake.recovery import DocumentRecovery
from orc.jobs.worker import JobWorker
from orc.mcp_client import McpConnection
from orc.models.factory import build_chat_model, model_label
from orc.models.prompting import restore_prompts, use_prompts
from orc.models.summaries import MAX_FACTS as SUMMARY_FACTS
from orc.principal import Principal
from orc.prompt_source import prompts_for
from orc.settings import Settings
from orc.turns.document_chat import AdmittedDocumentChat


@dataclass(frozen=True, slots=True)
class DocumentServices:
    """The document side of a process, over its :class:`~orc.composition.Foundation`: the model, the digests, the
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
    admission: Admission
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
) -> DocumentServices:
    """The model, digests, document tools and the MCP server over the foundation ``base`` (also used by
    ``python -m mcp_server``); closed with ``stack``.

    ``model`` replaces the configured model; ``digest_model`` the model that makes context digests (see
    :func:`digest_model_for`);
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
    parts = parts_of(base)
    admission = parts.admission
    digests, context, summaries = await _digests(settings, stack, base, digests_by, admission)
    library = DocumentLibrary(
        scopes=base.scopes,
        texts=parts.texts,
        retriever=parts.retriever,
        reprocessor=Reprocessor(parts.catalog, parts.processor),
        summaries=summaries,
    )
    document_chat = DocumentChatService(
        parts.stores.blobs,
        ProcessedFileCache(parts.tuning.file_cache_ttl_seconds),
        chat_model,
        retriever=parts.retriever,
        model_label=label,
        max_document_bytes=settings.max_upload_bytes,
        max_question_chars=settings.max_question_chars,
        max_documents=settings.max_blob_names,
        extraction_pool=parts.pool,
        # What the document processor stored is read, not extracted again, and file ids hold across instances.
        texts=SessionTexts(base.session_files),
        summaries=summaries_of(library),
    )
    services = McpServices(
        # An MCP client's document_chat answer is a model call: admitted and charged like a turn.
        document_chat=AdmittedDocumentChat(document_chat, admission),
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
            parts.catalog,
            parts.processor,
            digests,
            parts.queues.documents,
            parts.queues.digests,
            visibility_seconds=parts.tuning.queue_visibility_seconds,
            max_deliveries=parts.tuning.queue_max_deliveries,
        ),
        recovery=DocumentRecovery(
            parts.leases, parts.catalog, parts.stores.blobs, parts.processor, on_resumed=digest_again
        ),
        admission=admission,
    )


async def _digests(
    settings: Settings, stack: AsyncExitStack, base: Foundation, digest_model: BaseChatModel, admission: Admission
) -> tuple[SessionDigests, ContextFiles, DigestSummaries]:
    """The digests of the foundation's session files, the context-files service over them, and document summaries."""
    parts = parts_of(base)
    files, catalog = base.session_files, parts.catalog
    store = DigestStore(await parts.stores.collections.collection("digests"))
    runner = DigestRunner(digest_model)
    file_digests = FileDigests(catalog, parts.texts, store, runner, max_concurrency=parts.tuning.digest_concurrency)
    digests = SessionDigests(files, file_digests, store, runner, SessionSignals(), admission=admission)
    files.listen(digests)
    summaries = DigestSummaries(catalog, digests, file_digests)
    # Registered after the processor, so digests stop (and leave their work "stale") before it and the stores do.
    stack.push_async_callback(digests.aclose)
    stack.push_async_callback(summaries.aclose)
    return digests, ContextFiles(files, digests, store), summaries


def summaries_of(library: DocumentLibrary) -> FileSummaries:
    """What a summary request reads ("Summarize lease.md"): the files' stored digests, through the library."""

    async def read(
        principal: Principal, session_id: str, focus: tuple[str, str] | None, names: Sequence[str]
    ) -> list[SummaryWithSources]:
        return await library.summaries_for_turn(principal, session_id, focus, names, facts=SUMMARY_FACTS)

    return read


def in_memory_mcp(server: FastMCP) -> McpConnection:
    """The process's one in-memory session to the MCP server; each call names its turn's principal."""

    @asynccontextmanager
    async def connect() -> AsyncIterator[ClientSession]:
        # Set in the session's own task, so only the server task started here trusts principals in _meta.
        in_process_session.set(True)
        async with create_connected_server_and_client_session(server) as session:
            yield session

    return McpConnection(connect)
