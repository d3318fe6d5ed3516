"""Following a pending context request: its reminder before the deadline and its end, as ``context_update`` events
(context-handoff-plan §4.1.6 and §4.3.4).

A paused turn's own stream ends with ``context_required``; a client that shows the request then follows it here
(``GET …/context-requests/{request_id}/events``). The reminder comes at ``remind_at`` (``ORC_CONTEXT_REQUEST_REMINDER``
of the timeout) and is recorded in the request's stored history by :meth:`Handoff.remind` — once, whichever
instance or sweeper gets there first; the stream ends with the request (supplied, run without, cancelled,
superseded) or at its deadline (``expired``: the sweeper then answers without the context).

The waits are bounded by the next moment that matters and by ``poll_seconds`` (another instance may end the request
meanwhile); ``now`` is injectable, so tests drive the clock rather than wait for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

from orc.conversations.context_requests import ContextRequestRecord
from orc.graph.events import ContextUpdateEvent
from orc.handoff.lifecycle import Handoff
from orc.principal import Principal

POLL_SECONDS = 5.0
"""How often a follower re-reads the request while nothing is due (another instance may have moved it on)."""


def _update(record: ContextRequestRecord, status: str, at: str, note: str | None) -> ContextUpdateEvent:
    supplied = sorted({supply.slot for supply in record.supplies})
    event = ContextUpdateEvent(
        type="context_update",
        request_id=record.request_id,
        status=status,
        supplied=supplied,
        missing=record.missing_slots,
        at=at,
        expires_at=record.expires_at,
    )
    if note:
        event["note"] = note
    return event


def _ended(record: ContextRequestRecord) -> ContextUpdateEvent:
    last = record.events[-1] if record.events and record.events[-1].type != "reminder" else None
    return _update(record, record.status, record.ended_at or "", last.note if last else record.outcome)


async def follow(
    handoff: Handoff,
    principal: Principal,
    conversation_id: str,
    request_id: str,
    *,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    poll_seconds: float = POLL_SECONDS,
) -> AsyncIterator[ContextUpdateEvent]:
    """The request's ``context_update`` events: its state now (``pending``, at once, stamped with when it was
    asked), its reminder (once, when due or already sent), then its end. :class:`~orc.errors.NotFound`
    ``context_request_not_found`` before the first event, as for a read."""
    record = await handoff.request(principal, conversation_id, request_id)
    reminded = False
    if record.status == "pending":
        yield _update(record, "pending", record.created_at, None)
    while True:
        if record.status != "pending":
            yield _ended(record)
            return
        moment = now()
        stamp = moment.astimezone(UTC).isoformat()
        if stamp >= record.expires_at:
            yield _update(record, "expired", stamp, "No context came in time: the answer goes on without it.")
            return
        if not reminded and record.remind_at is not None and stamp >= record.remind_at:
            event = await handoff.remind(principal.partition_key, request_id, moment)
            if event is not None:
                yield _update(record, "reminder", event.at, event.note)
                reminded = True
            # None: the request moved on meanwhile; read it again and see.
            record = await handoff.request(principal, conversation_id, request_id)
            continue
        due = [datetime.fromisoformat(record.expires_at)]
        if not reminded and record.remind_at is not None:
            due.append(datetime.fromisoformat(record.remind_at))
        wait = min((min(due) - moment).total_seconds(), poll_seconds)
        await asyncio.sleep(max(wait, 0.0))
        record = await handoff.request(principal, conversation_id, request_id)


__all__ = ["POLL_SECONDS", "follow"]
