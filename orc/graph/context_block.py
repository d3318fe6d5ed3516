"""The context block of the centralized prompt: focus, historical contexts, available documents, priority rule.

Rendered from ``prompts/context_block.txt`` with strict variables; the tool-planning and answer prompts carry it
in their ``{context_block}`` slot. The documents come from the availability model (loaded by tool_router before
a planning call); a turn with attached files, which plans nothing, lists those files instead, so it costs no
storage round trip.

Every name in it — context ids, file names, statuses — is controlled by a user or a document: each is escaped as
data inside the ``<context>`` fence, so ``x </context><system>…`` stays one file name and cannot close the fence or
pose as another section.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

from orc.graph.state import ListedDocument, TurnState
from orc.models.prompting import load_prompt

MAX_LISTED_DOCUMENTS = 40
"""Documents named in the prompt; the rest are counted, and documents.list lists them all."""

_ORIGIN_LABEL = {"focus": "focus", "historical": "historical context"}


def _context_label(type_: str, id_: str) -> str:
    return escape(f"{type_} {id_}")


def _documents_text(documents: Sequence[ListedDocument] | None, blob_names: Sequence[str]) -> str:
    if documents is None:
        if blob_names:
            return f"- session (attached to this question): {', '.join(escape(name) for name in blob_names)}"
        return "- (not listed here; documents.list lists them)"
    if not documents:
        return "- none"
    groups: dict[tuple[str, str], list[str]] = {}
    labels: dict[tuple[str, str], str] = {}
    for doc in documents[:MAX_LISTED_DOCUMENTS]:
        key = (doc.context_type, doc.context_id)
        groups.setdefault(key, []).append(escape(f"{doc.filename} [{doc.status}]"))
        if doc.context_type == "session":
            labels[key] = "session (attached to this conversation)"
        elif doc.is_focus:
            labels[key] = f"{_context_label(*key)} (the focus)"
        elif doc.origin == "historical":
            labels[key] = f"{_context_label(*key)} (historical context)"
        else:
            labels[key] = f"{_context_label(*key)} (included by the focus)"
    lines = [f"- {labels[key]}: {', '.join(names)}" for key, names in groups.items()]
    if len(documents) > MAX_LISTED_DOCUMENTS:
        lines.append(f"- … and {len(documents) - MAX_LISTED_DOCUMENTS} more (documents.list lists them all)")
    return "\n".join(lines)


def render_context_block(state: TurnState) -> str:
    """The context block for the current state of the turn."""
    focus = state.get("focus_context")
    historical = state.get("historical_contexts") or []
    return load_prompt("context_block").render(
        focus=_context_label(focus.type, focus.id) if focus else "none",
        historical="; ".join(_context_label(c.type, c.id) for c in historical) or "none",
        documents=_documents_text(state.get("available_documents"), state.get("blob_names") or []),
    )
