"""Context requests where they happened in a conversation, for its history and exports (context-handoff-plan
§4.3.5: "hydrate saved requests/supplies so analysts can review how answers were produced").

A request paused the turn that followed the conversation's ``after_seq``-th stored turn. When that turn went on
(supplied, run without, expired) it was stored as turn ``after_seq + 1``: the request sits between its question and
its answer. When it did not (cancelled, superseded), its question was never stored: the request sits after turn
``after_seq``, with its question. Nothing here reads storage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from orc.conversations.context_requests import ContextRequestRecord, Supply

_OUTCOMES = {
    "supplied": "answered with the supplied context",
    "run_without": "answered without the context, as the user chose",
    "expired": "answered without the context: none came before the deadline",
    "cancelled": "cancelled: the question was not answered",
    "superseded": "superseded by a newer message",
}
_TEXT_SHOWN = 300


def answered(record: ContextRequestRecord) -> bool:
    """Whether the paused turn went on to an answer (stored as turn ``after_seq + 1``)."""
    return record.status in ("resolved", "expired")


def by_turn(requests: Sequence[ContextRequestRecord]) -> dict[int, list[ContextRequestRecord]]:
    """Requests grouped by the turn they belong before: turn ``after_seq + 1`` (its answer, or, for a question
    never answered, the place after turn ``after_seq``), oldest first."""
    placed: dict[int, list[ContextRequestRecord]] = {}
    for record in sorted(requests, key=lambda item: item.created_at):
        placed.setdefault(record.after_seq + 1, []).append(record)
    return placed


def outcome(record: ContextRequestRecord) -> str:
    """How the request ended, as a phrase (``pending`` while it waits)."""
    if record.status == "pending":
        return "waiting for context"
    return _OUTCOMES.get(record.outcome or record.status, record.outcome or record.status)


def _as_is(iso: str) -> str:
    return iso


def supply_line(supply: Supply, when: Callable[[str], str] = _as_is) -> str:
    """One supply as a line: what, for which slot, by whom, when (``when`` formats the timestamp)."""
    if supply.text is not None:
        text = " ".join(supply.text.split())
        what = f"“{text[:_TEXT_SHOWN]}{'…' if len(text) > _TEXT_SHOWN else ''}”"
        if supply.name:
            what = f"{supply.name}: {what}"
    elif supply.document_id is not None:
        what = f"document {supply.document_id}"
    else:
        what = f"passage {supply.source_ref}"
    return f"{supply.slot}: {what} — supplied by {supply.supplied_by} at {when(supply.supplied_at)}"


def lines(record: ContextRequestRecord, when: Callable[[str], str] = _as_is) -> list[str]:
    """The request as plain lines: what was asked, each reminder, each supply, how it ended (``when`` formats the
    timestamps)."""
    found = [f"Context requested ({when(record.created_at)}):"]
    found += [f"- needed {slot.slot}: {slot.description}" for slot in record.required]
    found += [f"- reminder ({when(event.at)}): {event.note}" for event in record.events if event.type == "reminder"]
    found += [f"- {supply_line(supply, when)}" for supply in record.supplies]
    ended = f" ({when(record.ended_at)})" if record.ended_at else ""
    found.append(f"- outcome{ended}: {outcome(record)}")
    return found


def entry(record: ContextRequestRecord) -> dict[str, object]:
    """The request as an entry of an exported message list (``role: context_request``)."""
    return {"role": "context_request", **record.public()}


__all__ = ["answered", "by_turn", "entry", "lines", "outcome", "supply_line"]
