"""The turn service (``Orchestrator``): every turn comes in here — asked, streamed or resumed — is admitted by the
turn's admission, prepared, run by the runner and charged. It also deletes conversations, with the graph checkpoints it
keeps for them (the other conversation operations are :class:`orc.sessions.Sessions`)."""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime

from orc.admission import Admission, Admitted
from orc.conversations import ConversationRepository
from orc.conversations.title_writer import TitleWriter
from orc.documents.sessions import SessionFiles
from orc.errors import Conflict, InternalError, NotFound, OrcError, ServiceUnavailable
from orc.graph.events import ContextRequiredEvent, ContextResolvedEvent, ErrorEvent, Event, citation_event
from orc.handoff import ContextUpdate, Handoff, Move, Resumption
from orc.names import validate_identifier
from orc.principal import LOCAL_PRINCIPAL, Principal
from orc.turns.contract import ContextRequired, Resumed, TurnRequest, TurnResult, final_event
from orc.turns.prepare import PreparedTurn, TurnPreparer
from orc.turns.runner import TurnRunner

log = logging.getLogger(__name__)


class Turn:
    """An admitted, prepared turn, to be run once: for its :meth:`result` or for its :meth:`events`.

    Its admission is released when the run ends; :meth:`release` frees it for a turn that is never run (a client
    that left before its stream started)."""

    __slots__ = ("_admission", "_resume", "_runner", "_turn")

    def __init__(
        self, runner: TurnRunner, turn: PreparedTurn, admission: Admitted, resume: Resumed | None = None
    ) -> None:
        self._runner = runner
        self._turn = turn
        self._admission = admission
        self._resume = resume

    async def result(self) -> TurnResult | ContextRequired:
        """Run the turn to its end: its stored answer, or the context it paused for. Nobody reads its events, so
        the graph streams none and the answer is requested whole. Raises :class:`OrcError` on failure."""
        result: TurnResult | ContextRequired | None = None
        try:
            async for item in self._runner.run(self._turn, self._admission, stream=False, resume=self._resume):
                if isinstance(item, TurnResult | ContextRequired):
                    result = item
        finally:
            self._admission.release()
        assert result is not None  # a run always ends with the result or raises
        return result

    async def events(self) -> AsyncIterator[Event]:
        """Run the turn for its events: ``context_resolved`` first for a resumed turn, then progress, tool and token
        events, then citations and ``final`` (or ``context_required``). A failure becomes a last ``error`` event and
        nothing is stored."""
        try:
            if self._resume is not None:
                yield ContextResolvedEvent(
                    type="context_resolved", request_id=self._resume["request_id"], outcome=self._resume["outcome"]
                )
            async for item in self._runner.run(self._turn, self._admission, stream=True, resume=self._resume):
                if isinstance(item, ContextRequired):
                    yield context_required_event(item)
                elif isinstance(item, TurnResult):
                    for citation in item.citations:
                        yield citation_event(citation)
                    yield final_event(item)
                else:
                    yield item
        except InternalError as exc:
            yield turn_failed(exc)
        except OrcError as exc:
            yield error_event(exc)
        except Exception as exc:
            yield turn_failed(exc)
        finally:
            self._admission.release()

    def release(self) -> None:
        """Free the turn's admission without running it (idempotent)."""
        self._admission.release()


class Orchestrator:
    """The turn service: answers questions about documents inside conversations, and deletes conversations.
    Build one with :func:`orc.build_orchestrator`.

    Three ways in: :meth:`ask` (the result), :meth:`stream` (the events) and :meth:`resume` (a paused turn: admitted,
    then its request moved on by handoff, then run); :meth:`start` is the first half of ask and stream, for an
    adapter that must refuse before it answers. Each admits the turn first; :meth:`expire_due`
    resumes the paused turns whose deadline passed. Reading and cancelling requests is :class:`~orc.handoff.Handoff`'s.
    """

    def __init__(
        self,
        *,
        preparer: TurnPreparer,
        runner: TurnRunner,
        admission: Admission,
        handoff: Handoff,
        conversations: ConversationRepository,
        files: SessionFiles,
        delete_checkpoints: Callable[[str], Awaitable[None]],
        titles: TitleWriter | None = None,
    ) -> None:
        self._preparer = preparer
        self._runner = runner
        self._limits = admission
        self._handoff = handoff
        self._conversations = conversations
        self._files = files
        self._delete_checkpoints = delete_checkpoints
        self._titles = titles

    async def settle(self) -> None:
        """Wait for the work a turn leaves running after its answer (a conversation's generated title)."""
        if self._titles is not None:
            await self._titles.settle()

    # -- turns ----------------------------------------------------------------------------------------------

    async def start(self, request: TurnRequest, principal: Principal = LOCAL_PRINCIPAL) -> Turn:
        """Admit and prepare a turn, not yet run: refusals (429) and bad requests are raised here, before anything
        is stored or streamed."""
        admission = await self._limits.admit(principal, "turn")
        try:
            prepared = await self._preparer.prepare(request, principal)
        except BaseException:
            admission.release()
            raise
        return Turn(self._runner, prepared, admission)

    async def ask(self, request: TurnRequest, principal: Principal = LOCAL_PRINCIPAL) -> TurnResult | ContextRequired:
        """Run one turn and return its answer (or, for a request that allows it, the context it pauses for)."""
        return await (await self.start(request, principal)).result()

    async def stream(self, request: TurnRequest, principal: Principal = LOCAL_PRINCIPAL) -> AsyncIterator[Event]:
        """Run one turn, yielding its events; failures, refusals included, end the stream with an ``error`` event."""
        try:
            turn = await self.start(request, principal)
        except InternalError:
            raise
        except OrcError as exc:
            yield error_event(exc)
            return
        async for event in turn.events():
            yield event

    async def resume(self, principal: Principal, move: Move) -> Turn | ContextUpdate:
        """Admit a turn for ``principal``, then ``move`` its paused request on (:func:`orc.handoff.supplying`,
        :func:`~orc.handoff.running_without`): the resumed turn to run, or the request's state when slots are still
        missing. Admission comes first, so a refused caller's request stays as it was."""
        admission = await self._limits.admit(principal, "turn")
        try:
            moved = await move(self._handoff)
        except BaseException:
            admission.release()
            raise
        if isinstance(moved, ContextUpdate):
            admission.release()
            return moved
        return Turn(self._runner, self._preparer.resumed(moved.record), admission, resumed(moved))

    # -- context handoff --------------------------------------------------------------------------------------

    async def expire_due(self, now: datetime | None = None) -> int:
        """Answer, without their context, the paused turns whose deadline passed; returns how many. Run by the
        embedded sweeper and by the timer-triggered function on Azure. A turn its principal's limits refuse now
        stays pending and is tried again at the next sweep."""
        moment = now or datetime.now(UTC)
        await self._handoff.remind_due(moment)
        answered = 0
        for partition_key, request_id in await self._handoff.due(moment):
            organization, _, user = partition_key.partition("/")
            principal = Principal(organization=organization, user=user)
            try:
                turn = await self.resume(principal, functools.partial(_expired, partition_key, request_id, moment))
                if isinstance(turn, Turn):
                    await turn.result()
                    answered += 1
            except Conflict:
                continue  # it ended meanwhile (or another instance answers it): nothing to answer here
            except OrcError as exc:
                log.warning("an expired context request could not be answered: %s", exc.code)
        return answered

    # -- sessions -------------------------------------------------------------------------------------------

    async def delete_session(self, conversation_id: str, principal: Principal = LOCAL_PRINCIPAL) -> None:
        """Delete a conversation, its files and its checkpoints."""
        validate_identifier(conversation_id, what="conversation")
        had_files = bool(await self._files.files(principal, conversation_id))
        deleted = await self._conversations.delete(principal, conversation_id)
        if not deleted and not had_files:
            raise NotFound("no such session", code="session_not_found")
        await self._files.remove_all(principal, conversation_id)
        await self._delete_checkpoints(f"{principal.partition_key}/{conversation_id}")


def resumed(moved: Resumption) -> Resumed:
    """What the graph resumes a paused turn with, from how its request ended."""
    return Resumed(
        action="supplied" if moved.outcome == "supplied" else "run_without",
        request_id=moved.record.request_id,
        outcome=moved.outcome,
        supplied=[source.model_dump(mode="json") for source in moved.supplied],
        note=moved.note,
    )


async def _expired(partition_key: str, request_id: str, moment: datetime, handoff: Handoff) -> Resumption:
    moved = await handoff.expire(partition_key, request_id, moment)
    if moved is None:
        raise Conflict("the context request ended before its deadline", code="context_request_ended")
    return moved


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
        redactions=body["redactions"],
    )
