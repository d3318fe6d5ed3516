"""Running a prepared turn: one at a time per conversation, the graph under one deadline, the turn stored whole.

The only module that runs the turn graph (an import-linter contract keeps it so). Its steps, each a function: take
the conversation's lock, build the typed runtime context, stream the graph's parts until the deadline, and store
the turn as the answer node finishes (while LangGraph writes its last checkpoint) — or record the pause.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, StreamMode

from orc.admission import Admitted, Gate
from orc.clock import utc_now
from orc.conversations import AssistantMessage, ConversationRepository, Snapshot, UserMessage
from orc.conversations.title_writer import TitleWriter
from orc.documents.catalog.summaries import FileSummaries
from orc.errors import ModelTimeout, OrcError
from orc.graph.builder import TurnGraph
from orc.graph.context import TurnContext
from orc.graph.events import Event
from orc.graph.pause import PAUSE_EVENT
from orc.graph.state import TurnState, fresh_turn_input
from orc.handoff import Handoff
from orc.mcp_client import McpConnection, McpToolbox
from orc.models.faults import model_fault
from orc.models.metering import ModelMeter
from orc.models.tokens import TokenCounter
from orc.output_policy import OutputPolicy
from orc.principal import Principal
from orc.storage.checkpoints import NEW_TURN
from orc.telemetry import turn_span
from orc.turns.contract import ContextRequired, Resumed, TurnMetadata, TurnResult
from orc.turns.prepare import PreparedTurn, TurnLimits

log = logging.getLogger(__name__)

STORE_ON_CLOSE_SECONDS = 10.0
"""How long closing waits for answered turns still being stored (one storage write each, with its own retries)."""

Outcome = Event | TurnResult | ContextRequired
"""What a run yields: the graph's events (when streamed), then the stored result or the request it paused with."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerParts:
    """What every turn runs on, built once by the composition root."""

    graph: TurnGraph
    conversations: ConversationRepository
    mcp: McpConnection
    offers_planning_tools: bool
    limits: TurnLimits
    token_counter: TokenCounter
    titles: TitleWriter | None
    handoff: Handoff
    session_digest: Callable[[Principal, str], Awaitable[str]] | None
    file_summaries: FileSummaries | None = None
    output_policy: OutputPolicy = field(default_factory=OutputPolicy)
    """What answers, quotes and suggestions may hold when they are streamed and stored (ORC_OUTPUT_IMAGE_HOSTS)."""


class TurnRunner:
    """Runs prepared (or resumed) turns; see the module docstring for its steps."""

    def __init__(self, parts: RunnerParts) -> None:
        self._parts = parts
        # A checkpoint is read only to resume a paused turn (history is in the conversation store): a turn that
        # cannot pause runs on this copy of the graph without a checkpointer, and serializes and writes no state.
        self._unsaved = parts.graph.copy(update={"checkpointer": None})
        # One turn at a time per conversation, so each turn sees the previous one; other conversations never wait.
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._storing: set[asyncio.Task[TurnResult]] = set()

    async def aclose(self) -> None:
        """Wait (a bounded time) for the answered turns still being stored, whose readers may be gone: a process
        that closes stores what the model answered before its stores close."""
        if self._storing:
            await asyncio.wait(set(self._storing), timeout=STORE_ON_CLOSE_SECONDS)

    async def run(
        self, turn: PreparedTurn, admission: Admitted, *, stream: bool, resume: Resumed | None
    ) -> AsyncIterator[Outcome]:
        """The turn's events as the graph streams them (none unless ``stream``), then its stored result (or the
        request it paused with), charged to ``admission``. Raises :class:`OrcError` on failure; nothing is stored
        for a failed turn."""
        async with self._lock(turn) as thread_id:
            async for outcome in self._run_locked(turn, thread_id, admission, stream=stream, resume=resume):
                yield outcome

    @asynccontextmanager
    async def _lock(self, turn: PreparedTurn) -> AsyncIterator[str]:
        """One turn at a time per conversation; yields the conversation's key (also the graph's thread id)."""
        key = f"{turn.principal.partition_key}/{turn.conversation_id}"
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        async with lock:
            with turn_span(turn.principal.organization, turn.principal.user, turn.conversation_id):
                yield key

    async def _run_locked(
        self, turn: PreparedTurn, thread_id: str, admission: Admitted, *, stream: bool, resume: Resumed | None
    ) -> AsyncIterator[Outcome]:
        started = time.perf_counter()
        meter = ModelMeter()
        stored: asyncio.Task[TurnResult] | None = None
        fresh = fresh_turn_input(turn.question, turn.usable_names, turn.focus_context, turn.unavailable)

        def finished(final: TurnState) -> None:
            # The answer node is done: store the turn now, while LangGraph writes the run's last checkpoint.
            # Fields no node wrote this turn keep their fresh values.
            nonlocal stored
            stored = asyncio.create_task(self._store(turn, {**fresh, **final}, meter))
            self._storing.add(stored)
            stored.add_done_callback(self._storing.discard)

        context = self._context(turn, meter, finished, stream=stream, resume=resume, gate=admission.gate)
        parts = self._astream(turn, thread_id, context, listens=stream or turn.allow_pause, resume=resume)
        paused: list[Any] | None = None
        try:
            try:
                async with aclosing(_until(parts, self._parts.limits.turn_timeout_seconds)) as chunks:
                    async for chunk in chunks:
                        if chunk.get("type") == PAUSE_EVENT:
                            paused = chunk["required"]
                        elif stream:
                            yield cast(Event, chunk)
            except Exception as exc:
                if stored is None:
                    fault = self._fault(exc)
                    if fault is exc:
                        raise
                    raise fault from exc
                # The run failed after its answer, writing its last checkpoint. Nothing reads the checkpoint of a
                # finished turn (the next turn starts afresh), so a turn that is stored whole has succeeded.
                await asyncio.shield(stored)
                log.warning("the last checkpoint of a finished turn was not written: %s", type(exc).__name__)
            if stored is None and paused is not None:
                request = await self._pause(turn, paused)
                await admission.charge(meter.usage)
                yield request
                return
            if stored is None:
                raise OrcError("the turn ended without an answer; nothing was stored")
            # Shielded: awaiting a task passes a cancellation on to it, and a reader that goes away (a closed
            # connection, a cancelled caller) must not take a turn the model has answered down with it.
            result = await asyncio.shield(stored)
        finally:
            if stored is not None and not stored.done():
                # The reader went away while the turn was being stored: let it finish, and log if it fails.
                stored.add_done_callback(_log_store_failure)
        result.metadata.elapsed_ms = round((time.perf_counter() - started) * 1000, 2)
        await admission.charge(result.metadata.usage)
        yield result

    def _context(
        self,
        turn: PreparedTurn,
        meter: ModelMeter,
        finished: Callable[[TurnState], None],
        *,
        stream: bool,
        resume: Resumed | None,
        gate: Gate | None,
    ) -> TurnContext:
        """The typed runtime context every node of this turn receives."""
        parts, limits, capabilities = self._parts, self._parts.limits, turn.model.capabilities
        may_pause = turn.allow_pause and resume is None
        return TurnContext(
            principal=turn.principal,
            conversation_id=turn.conversation_id,
            model=turn.model.model,
            conversations=parts.conversations,
            toolbox=McpToolbox(
                parts.mcp,
                principal=turn.principal,
                scope=tool_scope(turn),
            ),
            max_tool_rounds=limits.max_tool_rounds,
            token_counter=parts.token_counter,
            history_tokens=limits.history_tokens,
            sources_tokens=limits.sources_tokens,
            offers_planning_tools=parts.offers_planning_tools,
            meter=meter,
            finished=finished,
            stream_tokens=stream,
            corrective_retry=not capabilities.cites_by_construction,
            context_requests=may_pause,
            offers_request_context=may_pause and capabilities.asks_for_context,
            session_digest=parts.session_digest,
            file_summaries=parts.file_summaries,
            gate=gate,
            output_policy=parts.output_policy,
        )

    def _astream(
        self, turn: PreparedTurn, thread_id: str, context: TurnContext, *, listens: bool, resume: Resumed | None
    ) -> AsyncGenerator[Any, None]:
        """The graph's run: a new turn's input (or the resumption of a paused one), streaming only what is read."""
        # A resumed turn reads its checkpoint; a new one reads none (NEW_TURN, honoured by both savers and tested),
        # so every field but the input starts empty without writing 20 defaults into the channels.
        configurable: dict[str, Any] = {"thread_id": thread_id} if resume else {"thread_id": thread_id, NEW_TURN: True}
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
        # No callbacks on the run: the nodes record their model requests on the meter themselves. Streaming
        # "custom" events makes LangGraph run every node as a task of its own beside a waiter; a caller that reads
        # no events does not pay for that, nor for per-step outputs: the turn's final state comes from the answer
        # node (``finished``).
        stream_mode: list[StreamMode] = ["custom"] if listens else []
        if resume is None and not turn.allow_pause:
            # Nothing would ever read this turn's checkpoints: it runs without a checkpointer.
            run = self._unsaved.astream(graph_input, config, context=context, stream_mode=stream_mode)
        else:
            # Its last checkpoint is what a resumption reads; one per step would only add writes.
            run = self._parts.graph.astream(
                graph_input, config, context=context, stream_mode=stream_mode, durability="exit"
            )
        return cast(AsyncGenerator[Any, None], run)

    def _fault(self, exc: Exception) -> Exception:
        """What a failed run raises: its deadline as :class:`ModelTimeout`, a provider failure as its orc error,
        anything else unchanged."""
        if isinstance(exc, TimeoutError):
            return ModelTimeout(
                f"the turn did not finish within {self._parts.limits.turn_timeout_seconds:g} s; nothing was stored",
                retry_after=5,
            )
        return model_fault(exc) or exc

    async def _pause(self, turn: PreparedTurn, required: list[Any]) -> ContextRequired:
        """Record the request of a turn that paused for context."""
        record = await self._parts.handoff.pause(
            turn.principal,
            turn.conversation_id,
            turn.question,
            turn.blob_names,
            turn.focus_context,
            turn.model_alias,
            turn.unavailable,
            required,
        )
        return ContextRequired.of(record)

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
            sanitized=state["sanitized"],
        )
        stored = await self._parts.conversations.append_turn(
            turn.principal,
            turn.conversation_id,
            UserMessage(content=turn.question, blob_names=turn.blob_names, created_at=turn.asked_at),
            AssistantMessage(
                content=state["answer"],
                citations=citations,
                places_to_look=state["places_to_look"],
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
        titles = self._parts.titles
        if stored.seq == 1 and titles is not None and turn.model.capabilities.titles_conversations:
            titles.schedule(turn.model.model, turn.principal, turn.conversation_id, turn.question, state["answer"])
        return TurnResult(
            conversation_id=turn.conversation_id,
            message_id=stored.assistant.message_id,
            created_at=stored.assistant.created_at,
            answer=state["answer"],
            citations=citations,
            places_to_look=state["places_to_look"],
            files=files,
            metadata=metadata,
            suggestions=state["suggestions"],
        )


async def _until(parts: AsyncGenerator[Any, None], seconds: float) -> AsyncGenerator[dict[str, Any], None]:
    """The run's custom events, each wait bounded by what is left of the turn's one deadline (below the host's own
    limit), so a hung model cannot hold the caller past it. The run is closed however the reader stops."""
    deadline = asyncio.get_running_loop().time() + seconds
    try:
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    part = await anext(parts)
            except StopAsyncIteration:
                return
            mode, chunk = cast(tuple[str, Any], part)
            if mode == "custom":
                yield chunk
    finally:
        await parts.aclose()


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
