"""The turn service (``Orchestrator``): validates a turn, runs the graph, streams its events, stores the turn."""

from __future__ import annotations

import asyncio
import logging
import time
import unicodedata
import uuid
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command

from orc.clock import utc_now
from orc.contracts import UnavailableDocument
from orc.conversations import (
    AssistantMessage,
    Conversation,
    ConversationRepository,
    ConversationSummary,
    Feedback,
    FocusContext,
    Snapshot,
    UserMessage,
)
from orc.conversations.context_requests import ContextRequestRecord
from orc.conversations.export import ExportFormat, export, filename
from orc.conversations.title_writer import TitleWriter
from orc.conversations.titles import MAX_USER_TITLE_CHARS, clean_title
from orc.documents.attachments import unavailable_attachments
from orc.documents.library import DocumentLibrary
from orc.documents.sessions import SessionFiles
from orc.errors import (
    InternalError,
    InvalidInput,
    ModelTimeout,
    NotFound,
    OrcError,
    PayloadTooLarge,
    ServiceUnavailable,
)
from orc.graph.builder import TurnGraph
from orc.graph.context import TurnContext
from orc.graph.events import ContextRequiredEvent, ContextResolvedEvent, ErrorEvent, Event, citation_event
from orc.graph.pause import PAUSE_EVENT, Resumed
from orc.graph.state import TurnState, fresh_turn_input
from orc.handoff import ContextUpdate, Handoff, SupplyPayload
from orc.mcp_client import McpConnection, McpToolbox
from orc.models.choice import ChosenModel, ModelChoice
from orc.models.faults import model_fault
from orc.models.metering import ModelMeter
from orc.models.offline import OfflineExtractiveModel
from orc.models.tokens import EstimatedTokens, TokenCounter
from orc.names import normalize_blob_names, validate_identifier
from orc.principal import LOCAL_PRINCIPAL, Principal
from orc.storage.checkpoints import NEW_TURN
from orc.telemetry import turn_span
from orc.turns.contract import ContextRequired, TurnMetadata, TurnRequest, TurnResult, final_event

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TurnLimits:
    """Bounds on a turn's input and work."""

    max_question_chars: int = 4000
    max_blob_names: int = 20
    max_tool_rounds: int = 4
    history_turns: int = 10
    tool_timeout_seconds: float = 120.0
    history_tokens: int = 16_000
    """Token budget of the history in the answer request (``ORC_HISTORY_TOKENS``)."""
    sources_tokens: int = 12_000
    """Token budget of the sources in the answer prompt (``ORC_SOURCES_TOKENS``)."""
    turn_timeout_seconds: float = 200.0


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    """A validated turn, ready to run."""

    principal: Principal
    conversation_id: str
    question: str
    blob_names: list[str]
    focus_context: FocusContext | None
    model: ChosenModel
    unavailable: list[UnavailableDocument] = field(default_factory=list)
    """Attached files the answer cannot use (failed, or still uploading): left out of the tools, named in it."""
    allow_pause: bool = False
    """The caller can show a context request: a turn that lacks context pauses instead of answering."""
    model_alias: str | None = None
    asked_at: str = field(default_factory=utc_now)
    """When the question came in: the user message's time (the answer's is when it was written)."""

    @property
    def usable_names(self) -> list[str]:
        """The attached files the turn's tools read."""
        left_out = {document.name for document in self.unavailable}
        return [name for name in self.blob_names if name not in left_out]


class Orchestrator:
    """Answers questions about documents inside conversations. Build one with :func:`orc.build_orchestrator`."""

    def __init__(
        self,
        *,
        graph: TurnGraph,
        models: ModelChoice,
        conversations: ConversationRepository,
        files: SessionFiles,
        documents: DocumentLibrary,
        mcp: McpConnection,
        offers_planning_tools: bool,
        limits: TurnLimits,
        delete_checkpoints: Callable[[str], Awaitable[None]],
        token_counter: TokenCounter | None = None,
        titles: TitleWriter | None = None,
        handoff: Handoff | None = None,
        session_digest: Callable[[Principal, str], Awaitable[str]] | None = None,
    ) -> None:
        self._graph = graph
        self._models = models
        self._conversations = conversations
        self._files = files
        # Focus validation and the prompt's list of available documents use the same availability as the tools.
        self._documents = documents
        self._mcp = mcp
        self._offers_planning_tools = offers_planning_tools
        self._limits = limits
        self._delete_checkpoints = delete_checkpoints
        # Chosen once for the model by the composition root (it may load a tokenizer); the estimate otherwise.
        self._token_counter: TokenCounter = token_counter or EstimatedTokens()
        # One turn at a time per conversation, so each turn sees the previous one; other conversations never wait.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._titles = titles
        self._handoff = handoff
        self._session_digest = session_digest

    async def settle(self) -> None:
        """Wait for the work a turn leaves running after its answer (a conversation's generated title)."""
        if self._titles is not None:
            await self._titles.settle()

    # -- turns ----------------------------------------------------------------------------------------------

    async def prepare(self, request: TurnRequest, principal: Principal = LOCAL_PRINCIPAL) -> PreparedTurn:
        """Validate the request; raises a :class:`orc.errors.CallerError` before anything is stored or streamed."""
        question = checked_question(request.question)
        if len(question) > self._limits.max_question_chars:
            raise PayloadTooLarge(
                f"the question is longer than {self._limits.max_question_chars} characters",
                code="question_too_long",
            )
        conversation_id = request.conversation_id or str(uuid.uuid4())
        validate_identifier(conversation_id, what="conversation")
        if len(request.blob_names) > self._limits.max_blob_names:
            raise InvalidInput(f"at most {self._limits.max_blob_names} blob_names per turn", code="too_many_blob_names")
        blob_names = normalize_blob_names(request.blob_names)
        records = await self._files.require_names(principal, conversation_id, blob_names)
        if request.context is not None:
            await self._documents.check_focus(principal, request.context)
        model = self._models.pick(request.model)
        allow = (request.context_requests or self._handoff.default_mode) == "allow" if self._handoff else False
        return PreparedTurn(
            principal,
            conversation_id,
            question,
            blob_names,
            request.context,
            model,
            unavailable_attachments(records),
            allow_pause=allow,
            model_alias=request.model,
        )

    async def ask(self, request: TurnRequest, principal: Principal = LOCAL_PRINCIPAL) -> TurnResult | ContextRequired:
        """Run one turn and return its answer (or, for a request that allows it, the context it pauses for)."""
        return await self.complete(await self.prepare(request, principal))

    async def complete(self, turn: PreparedTurn, resume: Resumed | None = None) -> TurnResult | ContextRequired:
        """Run a prepared turn (or resume a paused one) to its end and return the result.

        Nobody reads the turn's events, so the graph streams none and the answer is requested whole.
        """
        result: TurnResult | ContextRequired | None = None
        async with self._turn_lock(turn) as key:
            async for item in self._run_locked(turn, key, stream=False, resume=resume):
                if isinstance(item, TurnResult | ContextRequired):
                    result = item
        assert result is not None  # _run_locked always ends with the result or raises
        return result

    async def stream(self, request: TurnRequest, principal: Principal = LOCAL_PRINCIPAL) -> AsyncIterator[Event]:
        """Run one turn, yielding its events; failures end the stream with an ``error`` event."""
        try:
            prepared = await self.prepare(request, principal)
        except InternalError:
            raise
        except OrcError as exc:
            yield error_event(exc)
            return
        async for event in self.stream_prepared(prepared):
            yield event

    async def stream_prepared(self, turn: PreparedTurn, resume: Resumed | None = None) -> AsyncIterator[Event]:
        """The events of a prepared (or resumed) turn; a failure becomes a final ``error`` event and nothing is
        stored."""
        try:
            async for event in self.run(turn, resume):
                yield event
        except InternalError as exc:
            yield turn_failed(exc)
        except OrcError as exc:
            yield error_event(exc)
        except Exception as exc:
            yield turn_failed(exc)

    async def run(self, turn: PreparedTurn, resume: Resumed | None = None) -> AsyncIterator[Event]:
        """Run a prepared turn (or resume a paused one): progress, tool and token events, then citations and
        ``final`` (or ``context_required``, for a turn that pauses).

        Raises :class:`OrcError` on failure; nothing is stored for a failed turn.
        """
        if resume is not None:
            yield ContextResolvedEvent(
                type="context_resolved", request_id=resume["request_id"], outcome=resume["outcome"]
            )
        async with self._turn_lock(turn) as key:
            async for item in self._run_locked(turn, key, stream=True, resume=resume):
                if isinstance(item, ContextRequired):
                    yield context_required_event(item)
                elif isinstance(item, TurnResult):
                    for citation in item.citations:
                        yield citation_event(citation)
                    yield final_event(item)
                else:
                    yield item

    @asynccontextmanager
    async def _turn_lock(self, turn: PreparedTurn) -> AsyncIterator[str]:
        """One turn at a time per conversation; yields the conversation's key (also the graph's thread id)."""
        key = f"{turn.principal.partition_key}/{turn.conversation_id}"
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        async with lock:
            with turn_span(turn.principal.organization, turn.principal.user, turn.conversation_id):
                yield key

    async def _run_locked(
        self, turn: PreparedTurn, thread_id: str, stream: bool, resume: Resumed | None = None
    ) -> AsyncIterator[Event | TurnResult | ContextRequired]:
        """The turn's events as the graph streams them (none unless ``stream``), then its stored result (or the
        request it paused with)."""
        started = time.perf_counter()
        meter = ModelMeter()
        stored: asyncio.Task[TurnResult] | None = None

        fresh = fresh_turn_input(turn.question, turn.usable_names, turn.focus_context, turn.unavailable)

        def finished(final: TurnState) -> None:
            # The answer node is done: store the turn now, while LangGraph writes the run's last checkpoint.
            # Fields no node wrote this turn keep their fresh values.
            nonlocal stored
            stored = asyncio.create_task(self._store(turn, {**fresh, **final}, meter))

        toolbox = McpToolbox(
            self._mcp,
            principal=turn.principal,
            scope=tool_scope(turn),
            call_timeout_seconds=self._limits.tool_timeout_seconds,
        )
        context = TurnContext(
            principal=turn.principal,
            conversation_id=turn.conversation_id,
            model=turn.model.model,
            conversations=self._conversations,
            toolbox=toolbox,
            max_tool_rounds=self._limits.max_tool_rounds,
            history_turns=self._limits.history_turns,
            token_counter=self._token_counter,
            history_tokens=self._limits.history_tokens,
            sources_tokens=self._limits.sources_tokens,
            offers_planning_tools=self._offers_planning_tools,
            documents=self._documents,
            meter=meter,
            finished=finished,
            stream_tokens=stream,
            corrective_retry=not isinstance(turn.model.model, OfflineExtractiveModel),
            context_requests=turn.allow_pause and resume is None,
            offers_request_context=turn.allow_pause
            and resume is None
            and not isinstance(turn.model.model, OfflineExtractiveModel),
            session_digest=self._session_digest,
        )
        paused: list[Any] | None = None
        # No callbacks on the run: the nodes record their model requests on the meter themselves.
        # A resumed turn reads its checkpoint; a new one reads none.
        configurable: dict[str, Any] = (
            {"thread_id": thread_id} if resume is not None else {"thread_id": thread_id, NEW_TURN: True}
        )
        config: RunnableConfig = {"configurable": configurable}
        graph_input: Any = (
            Command(resume=resume)
            if resume is not None
            else {
                "question": turn.question,
                "blob_names": turn.usable_names,
                "focus_context": turn.focus_context,
                "unavailable_documents": turn.unavailable,
            }
        )
        listens = stream or turn.allow_pause
        # The whole turn has one deadline (below the host's own limit): every wait for the graph's next event is
        # bounded by what is left of it, so a hung model cannot hold the caller past it.
        deadline = asyncio.get_running_loop().time() + self._limits.turn_timeout_seconds
        parts = cast(
            AsyncGenerator[Any, None],
            self._graph.astream(
                # Only the turn's input: a new turn reads no checkpoint (NEW_TURN, honoured by both savers and
                # tested), so every other field starts empty, and writing 20 defaults into the channels was a step's
                # worth of work.
                graph_input,
                config,
                context=context,
                # Streaming "custom" events makes LangGraph run every node as a task of its own beside a waiter; a
                # caller that reads no events does not pay for that, nor for per-step outputs: the turn's final
                # state comes from the answer node (``finished``).
                stream_mode=["custom"] if listens else [],
                # History lives in the conversation store; a checkpoint per step would only add writes.
                durability="exit",
            ),
        )
        try:
            try:
                while True:
                    try:
                        async with asyncio.timeout_at(deadline):
                            part = await anext(parts)
                    except StopAsyncIteration:
                        break
                    mode, chunk = cast(tuple[str, Any], part)
                    if mode != "custom":
                        continue
                    if chunk.get("type") == PAUSE_EVENT:
                        paused = chunk["required"]
                    elif stream:
                        yield cast(Event, chunk)
            except Exception as exc:
                if stored is None:
                    fault = self._turn_fault(exc)
                    if fault is exc:
                        raise
                    raise fault from exc
                # The run failed after its answer, writing its last checkpoint. Nothing reads the checkpoint of a
                # finished turn (the next turn starts afresh), so a turn that is stored whole has succeeded.
                await stored
                log.warning("the last checkpoint of a finished turn was not written: %s", type(exc).__name__)
            finally:
                await parts.aclose()
            if stored is None and paused is not None and self._handoff is not None:
                record = await self._handoff.pause(
                    turn.principal,
                    turn.conversation_id,
                    turn.question,
                    turn.blob_names,
                    turn.focus_context,
                    turn.model_alias,
                    turn.unavailable,
                    paused,
                )
                yield ContextRequired.of(record)
                return
            if stored is None:
                raise OrcError("the turn ended without an answer; nothing was stored")
            result = await stored
        finally:
            if stored is not None and not stored.done():
                # The reader went away while the turn was being stored: let it finish, and log if it fails.
                stored.add_done_callback(_log_store_failure)
        result.metadata.elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
        yield result

    def _turn_fault(self, exc: Exception) -> Exception:
        """What a failed run raises: its deadline as :class:`ModelTimeout`, a provider failure as its orc error,
        anything else unchanged."""
        if isinstance(exc, TimeoutError):
            return ModelTimeout(
                f"the turn did not finish within {self._limits.turn_timeout_seconds:g} s; nothing was stored",
                retry_after=5,
            )
        return model_fault(exc) or exc

    async def _store(self, turn: PreparedTurn, state: TurnState, meter: ModelMeter) -> TurnResult:
        """Append the finished turn to its conversation, whole, and return its result."""
        citations = state["citations"]
        files = state["uploaded_file_refs"]
        usage = meter.usage + state["tool_usage"]
        # The state holds models already: TurnMetadata and the messages take them as they are (pydantic does not
        # validate an instance of the field's own model again).
        metadata = TurnMetadata(
            tool=state["last_mcp_tool_used"],
            cache=state["cache"],
            model=turn.model.label,
            model_calls=meter.calls + state["tool_model_calls"],
            usage=usage,
            tool_calls=state["tool_records"],
            elapsed_ms=0.0,
            focus_context=turn.focus_context,
            historical_contexts=state["historical_contexts"],
            grounding=state["grounding"],
            unavailable_documents=turn.unavailable,
            retrieval_rounds=state["retrieval_rounds"],
            retrieval=state.get("retrieval"),
        )
        stored = await self._conversations.append_turn(
            turn.principal,
            turn.conversation_id,
            UserMessage(content=turn.question, blob_names=turn.blob_names, created_at=turn.asked_at),
            AssistantMessage(
                content=state["answer"],
                citations=citations,
                tool_calls=metadata.tool_calls,
                uploaded_file_refs=files,
                last_mcp_tool_used=metadata.tool,
                focus_context=turn.focus_context,
                model=turn.model.label,
                usage=usage,
                created_at=utc_now(),
            ),
            seen=Snapshot(header=state["conversation_header"], turns=[]),
        )
        if stored.seq == 1 and self._titles is not None and not isinstance(turn.model.model, OfflineExtractiveModel):
            self._titles.schedule(
                turn.model.model, turn.principal, turn.conversation_id, turn.question, state["answer"]
            )
        return TurnResult(
            conversation_id=turn.conversation_id,
            message_id=stored.assistant.message_id,
            created_at=stored.assistant.created_at,
            answer=state["answer"],
            citations=citations,
            files=files,
            metadata=metadata,
            suggestions=state["suggestions"],
        )

    # -- context handoff --------------------------------------------------------------------------------------

    @property
    def handoff(self) -> Handoff:
        """The context requests of paused turns (:class:`orc.handoff.Handoff`)."""
        if self._handoff is None:
            raise OrcError("context requests are not configured in this process")
        return self._handoff

    async def begin_supply(
        self, conversation_id: str, request_id: str, payloads: Sequence[SupplyPayload], principal: Principal
    ) -> tuple[PreparedTurn, Resumed] | ContextUpdate:
        """Add what the user supplied to a paused turn's request: the turn to resume (run it with :meth:`complete`
        or :meth:`run`), or the request's state when slots are still missing."""
        validate_identifier(conversation_id, what="conversation")
        validate_identifier(request_id, what="context request")
        moved = await self.handoff.supply(principal, conversation_id, request_id, payloads)
        if isinstance(moved, ContextUpdate):
            return moved
        return self._resumed_turn(moved.record), moved.resume

    async def supply(
        self,
        conversation_id: str,
        request_id: str,
        payloads: Sequence[SupplyPayload],
        principal: Principal = LOCAL_PRINCIPAL,
    ) -> TurnResult | ContextRequired | ContextUpdate:
        """Supply context to a paused turn; once every required slot has something, the turn resumes and this
        returns its answer."""
        begun = await self.begin_supply(conversation_id, request_id, payloads, principal)
        if isinstance(begun, ContextUpdate):
            return begun
        return await self.complete(*begun)

    async def begin_run_without(
        self, conversation_id: str, request_id: str, principal: Principal = LOCAL_PRINCIPAL
    ) -> tuple[PreparedTurn, Resumed]:
        """Resolve a paused turn's request without its context: the turn to resume (its answer says so)."""
        validate_identifier(conversation_id, what="conversation")
        validate_identifier(request_id, what="context request")
        moved = await self.handoff.run_without(principal, conversation_id, request_id)
        return self._resumed_turn(moved.record), moved.resume

    async def run_without(
        self, conversation_id: str, request_id: str, principal: Principal = LOCAL_PRINCIPAL
    ) -> TurnResult | ContextRequired:
        """Answer a paused turn without the context it asked for."""
        return await self.complete(*await self.begin_run_without(conversation_id, request_id, principal))

    async def cancel(
        self, conversation_id: str, request_id: str, principal: Principal = LOCAL_PRINCIPAL
    ) -> ContextRequestRecord:
        """Cancel a paused turn: no answer is made."""
        validate_identifier(conversation_id, what="conversation")
        validate_identifier(request_id, what="context request")
        return await self.handoff.cancel(principal, conversation_id, request_id)

    async def context_requests(
        self, conversation_id: str, principal: Principal = LOCAL_PRINCIPAL
    ) -> list[dict[str, object]]:
        """A conversation's context requests with their supplies and how each ended."""
        validate_identifier(conversation_id, what="conversation")
        return await self.handoff.history(principal, conversation_id)

    async def expire_due(self, now: datetime | None = None) -> int:
        """Answer, without their context, the paused turns whose deadline passed; returns how many. Run by the
        embedded sweeper and by the timer-triggered function on Azure."""
        if self._handoff is None:
            return 0
        moment = now or datetime.now(UTC)
        answered = 0
        for partition_key, request_id in await self._handoff.requests.due(moment):
            moved = await self._handoff.expire(partition_key, request_id, moment)
            if moved is None:
                continue
            try:
                await self.complete(self._resumed_turn(moved.record), moved.resume)
                answered += 1
            except OrcError as exc:
                log.warning("an expired context request could not be answered: %s", exc.code)
        return answered

    def _resumed_turn(self, record: ContextRequestRecord) -> PreparedTurn:
        try:
            model = self._models.pick(record.model)
        except OrcError:
            model = self._models.pick(None)  # the alias left the allow-list while the turn waited
        return PreparedTurn(
            record.principal,
            record.conversation_id,
            record.question,
            record.blob_names,
            record.focus_context,
            model,
            list(record.unavailable),
            allow_pause=False,
            model_alias=record.model,
        )

    # -- sessions -------------------------------------------------------------------------------------------

    async def list_sessions(self, principal: Principal = LOCAL_PRINCIPAL) -> list[ConversationSummary]:
        """The principal's conversations, most recent first: those with turns, and those with files but no turn yet
        (a client that uploads first must find its session in the list)."""
        summaries, headers = await asyncio.gather(self._conversations.list(principal), self._files.sessions(principal))
        known = {summary.conversation_id for summary in summaries}
        file_only = [
            ConversationSummary(
                conversation_id=header.conversation_id,
                title=", ".join(member.filename for member in (header.files or ())[:3]) or "Untitled",
                message_count=0,
                created_at=header.updated_at,
                updated_at=header.updated_at,
            )
            for header in headers
            if header.conversation_id not in known and header.files
        ]
        if not file_only:
            return summaries
        return sorted([*summaries, *file_only], key=lambda summary: summary.updated_at, reverse=True)

    async def get_session(self, conversation_id: str, principal: Principal = LOCAL_PRINCIPAL) -> Conversation:
        """A conversation with its full history and the feedback on its answers; :class:`NotFound` for unknown or
        other principals' ids."""
        validate_identifier(conversation_id, what="conversation")
        summary = await self._conversations.get(principal, conversation_id)
        if summary is None:
            raise NotFound("no such session", code="session_not_found")
        turns, feedback = await asyncio.gather(
            self._conversations.turns(principal, conversation_id),
            self._conversations.feedback(principal, conversation_id),
        )
        if feedback:
            turns = [
                turn.model_copy(
                    update={
                        "assistant": turn.assistant.model_copy(update={"feedback": feedback[turn.assistant.message_id]})
                    }
                )
                if turn.assistant.message_id in feedback
                else turn
                for turn in turns
            ]
        return Conversation(summary=summary, turns=turns)

    async def rename_session(
        self, conversation_id: str, title: str, principal: Principal = LOCAL_PRINCIPAL
    ) -> ConversationSummary:
        """Give a conversation the title the user chose (never replaced by a generated one)."""
        validate_identifier(conversation_id, what="conversation")
        cleaned = clean_title(title)
        if not cleaned:
            raise InvalidInput("the title is empty", code="empty_title")
        if len(cleaned) > MAX_USER_TITLE_CHARS:
            raise PayloadTooLarge(f"the title is longer than {MAX_USER_TITLE_CHARS} characters", code="title_too_long")
        summary = await self._conversations.rename(principal, conversation_id, cleaned)
        if summary is None:
            raise NotFound("no such session", code="session_not_found")
        return summary

    async def give_feedback(
        self, conversation_id: str, message_id: str, feedback: Feedback, principal: Principal = LOCAL_PRINCIPAL
    ) -> Feedback:
        """Rate an answer (``up``/``down``, optional comment); a second rating of the same answer replaces the
        first. :class:`NotFound` when the conversation has no such answer."""
        validate_identifier(conversation_id, what="conversation")
        stored = await self._conversations.set_feedback(principal, conversation_id, message_id, feedback)
        if stored is None:
            raise NotFound("no such answer in this session", code="message_not_found")
        return stored

    async def export_session(
        self, conversation_id: str, fmt: ExportFormat, principal: Principal = LOCAL_PRINCIPAL
    ) -> tuple[bytes, str]:
        """The whole conversation as ``fmt`` (markdown, pdf or json) and a file name for it."""
        conversation = await self.get_session(conversation_id, principal)
        feedback = {
            turn.assistant.message_id: turn.assistant.feedback for turn in conversation.turns if turn.assistant.feedback
        }
        # Laying out a long conversation as a PDF takes tens of milliseconds: not on the event loop.
        data = await asyncio.to_thread(export, conversation, feedback, fmt)
        return data, filename(conversation, fmt)

    async def delete_session(self, conversation_id: str, principal: Principal = LOCAL_PRINCIPAL) -> None:
        """Delete a conversation, its files and its checkpoints."""
        validate_identifier(conversation_id, what="conversation")
        had_files = bool(await self._files.files(principal, conversation_id))
        deleted = await self._conversations.delete(principal, conversation_id)
        if not deleted and not had_files:
            raise NotFound("no such session", code="session_not_found")
        await self._files.remove_all(principal, conversation_id)
        await self._delete_checkpoints(f"{principal.partition_key}/{conversation_id}")


def _log_store_failure(task: asyncio.Task[TurnResult]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("storing a finished turn failed: %s", type(task.exception()).__name__)


def tool_scope(turn: PreparedTurn) -> dict[str, Any]:
    """The scope arguments the executor injects into every tool call (the model never sees or sets them)."""
    scope: dict[str, Any] = {"session_id": turn.conversation_id, "include_historical": True}
    if turn.focus_context is not None:
        scope["context_type"] = turn.focus_context.type
        scope["context_id"] = turn.focus_context.id
    return scope


def error_event(exc: OrcError) -> ErrorEvent:
    """The ``error`` stream event for a failure: a stable code, a message safe to show, and when to retry."""
    event = ErrorEvent(type="error", code=exc.code, message=exc.message, status=exc.status)
    if isinstance(exc, ServiceUnavailable):
        event["retry_after"] = exc.retry_after if exc.retry_after is not None else 1
    return event


def turn_failed(exc: Exception) -> Event:
    """The ``error`` event of a failure no client can act on (an :class:`~orc.errors.InternalError` is one)."""
    # The client gets a stable code; the details stay in the server log (type only at INFO and above).
    log.warning("turn failed: %s", type(exc).__name__)
    log.debug("turn failure details", exc_info=exc)
    return error_event(OrcError("the turn failed; nothing was stored. Retry, or contact the operator."))


def context_required_event(paused: ContextRequired) -> ContextRequiredEvent:
    """The ``context_required`` stream event of a paused turn (the stream ends after it)."""
    body = paused.model_dump(mode="json")
    return ContextRequiredEvent(
        type="context_required",
        conversation_id=body["conversation_id"],
        user_message_id=body["user_message_id"],
        request_id=body["request_id"],
        required=body["required"],
        expires_at=body["expires_at"],
    )


_INVISIBLE = {"Cf", "Zl", "Zp"}
_ALLOWED_CONTROLS = {"\n", "\t", "\r"}


def checked_question(text: str) -> str:
    """The question, stripped; refused before anything runs when it has nothing visible (``empty_question``) or
    characters no text should hold: lone surrogates, NUL and other control characters (``invalid_question``)."""
    question = text.strip()
    for char in question:
        category = unicodedata.category(char)
        if category == "Cs" or (category == "Cc" and char not in _ALLOWED_CONTROLS):
            raise InvalidInput(
                "the question contains characters that are not text (a lone surrogate or a control character)",
                code="invalid_question",
            )
    if not any(unicodedata.category(char) not in _INVISIBLE and not char.isspace() for char in question):
        raise InvalidInput("the question is empty", code="empty_question")
    return question
