"""When a turn should ask for context instead of answering (context-handoff-plan's ``ContextNeedsAnalyzer``).

Rules, checked on the evidence a turn gathered, before its answer request (so a paused turn costs no model call):

- an attached file the answer cannot use (its processing failed, or its upload has not finished) → a ``document``
  slot for it;
- the question names a file that is neither attached nor available in the turn's contexts → a ``document`` slot;
- no retrieved span covers at least half of the question's content words → an ``evidence`` slot: the documents
  do not say, so the user is asked to paste or point at what does;
- before any tool ran (:func:`needed_before_tools`): a question with nothing to answer from — no file attached and
  none available in the turn's contexts — → a ``documents`` slot that says so, instead of an answer that could not
  find anything. Small talk (no content word, or only greetings and thanks) never asks.

One threshold decides between asking and answering, :data:`MIN_COVERAGE`; whether an answer then declines is the
answerer's own decision. Its value is measured on the real-document sets (``bench/handoff_needs.py``, figures in
``bench/README.md``): the share of answerable questions it pauses, and of unanswerable ones it asks for instead of
declining.

Each slot offers one-click suggestions: documents available in the focus context that the turn did not read, the
spans that came closest, and the previous answer. The offline model relies on these rules alone; a real model
could ask through a tool as well (not built yet).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from orc.contracts import SourceSpan, UnavailableDocument
from orc.conversations.context_requests import RequiredSlot, SlotPhase, SuggestedSupply, Suggestion
from orc.graph.state import ListedDocument, PriorTurn, TurnState
from orc.models.small_talk import is_small_talk
from orc.text import tokenize

MIN_COVERAGE = 0.2
"""The share of the question's content words the best span must contain for the evidence to count as good: below
it the turn asks (for a caller that allows it), at or above it the answerer answers or declines. Chosen with
``bench/handoff_needs.py`` (figures in ``bench/README.md``): above 0.2, paraphrased questions start to pause
although their documents answer them."""
MAX_SUGGESTIONS = 5
_EXTENSIONS = r"(?:pdf|docx?|pptx?|xlsx?|csv|txt|md|json|html?)"
_FILE_NAME = re.compile(
    rf"[\"“']([^\"”'\n]{{1,120}}\.{_EXTENSIONS})[\"”']|(?<![\w.-])([\w][\w.()-]{{0,120}}\.{_EXTENSIONS})\b",
    re.IGNORECASE,
)


def needed_before_tools(
    question: str,
    available: Sequence[ListedDocument] | None,
    attached: Sequence[str],
    history: Sequence[PriorTurn],
) -> list[RequiredSlot]:
    """The slots a turn whose planning chose no tool should ask for before answering; empty when it can answer.

    The evidence rule does not apply here (no tool ran, so no span could cover anything): only a question with no
    document at all to answer from, or one that names a file the conversation lacks, asks.
    """
    if not tokenize(question) or is_small_talk(question):
        return []
    slots = _named_file_slots(question, [], available, attached, history, phase="before_tools")
    if slots or attached or available:
        return slots
    return [
        RequiredSlot(
            slot="documents",
            kind="document",
            description="This conversation has no documents to answer from: none is attached and none is available "
            "in its contexts. Attach the document that answers the question, or paste the passage that does.",
            suggestions=_suggestions([], available, attached, history),
            phase="before_tools",
            artifact_type="document",
        )
    ]


def needed_context(
    question: str,
    sources: Sequence[SourceSpan],
    unavailable: Sequence[UnavailableDocument],
    available: Sequence[ListedDocument] | None,
    attached: Sequence[str],
    history: Sequence[PriorTurn],
) -> list[RequiredSlot]:
    """The slots a turn should ask for before answering; empty when it can answer."""
    slots: list[RequiredSlot] = []
    if is_small_talk(question):
        # "Hello, thanks!" needs no evidence, whatever the documents hold.
        return slots
    for document in unavailable:
        slots.append(
            RequiredSlot(
                slot=f"document:{document.name}",
                kind="document",
                description=f"{document.name} could not be used ({document.reason}). Paste its text or attach "
                "another copy or another document with the same information.",
                suggestions=_suggestions(sources, available, attached, history),
                artifact_type="document",
                key_path=f"documents/{document.name}",
            )
        )
    slots += _named_file_slots(question, sources, available, attached, history, phase="after_tools")
    if not slots and coverage(question, sources) < MIN_COVERAGE:
        slots.append(
            RequiredSlot(
                slot="evidence",
                kind="evidence",
                description="The documents do not seem to answer this question. Paste the passage that does, "
                "attach the document it is in, or pick one of the suggestions.",
                suggestions=_suggestions(sources, available, attached, history),
            )
        )
    return slots


def _named_file_slots(
    question: str,
    sources: Sequence[SourceSpan],
    available: Sequence[ListedDocument] | None,
    attached: Sequence[str],
    history: Sequence[PriorTurn],
    *,
    phase: SlotPhase,
) -> list[RequiredSlot]:
    known = {name.lower() for name in attached} | {doc.filename.lower() for doc in available or []}
    return [
        RequiredSlot(
            slot=f"document:{named}",
            kind="document",
            description=f"The question names {named}, which is not available to this conversation. Attach "
            "it, or paste the part that answers the question.",
            suggestions=_suggestions(sources, available, attached, history),
            phase=phase,
            artifact_type="document",
            key_path=f"documents/{named}",
        )
        for named in _named_files(question)
        if named.lower() not in known
    ]


def coverage(question: str, sources: Sequence[SourceSpan]) -> float:
    """The largest share of the question's content words that one source contains (1.0 for a question with none)."""
    terms = set(tokenize(question))
    if not terms:
        return 1.0
    return max((len(terms & set(tokenize(source.text))) / len(terms) for source in sources), default=0.0)


def _named_files(question: str) -> list[str]:
    return list(dict.fromkeys((quoted or bare).strip() for quoted, bare in _FILE_NAME.findall(question)))


def _suggestions(
    sources: Sequence[SourceSpan],
    available: Sequence[ListedDocument] | None,
    attached: Sequence[str],
    history: Sequence[PriorTurn],
) -> list[Suggestion]:
    found: list[Suggestion] = []
    for document in available or []:
        document_id = document.document_id
        if document.filename in attached or document.status != "ready" or document_id is None:
            continue
        where = (
            "this conversation"
            if document.context_type == "session"
            else f"{document.context_type} {document.context_id}"
        )
        found.append(
            Suggestion(
                kind="document",
                label=f"{document.filename} ({where})",
                supply=SuggestedSupply(document_id=document_id),
            )
        )
    for source in sources[:3]:
        found.append(
            Suggestion(
                kind="span",
                label=f"{source.ref}: {_excerpt(source.text)}",
                supply=SuggestedSupply(source_ref=source.ref),
            )
        )
    if history:
        last = history[-1]
        found.append(
            Suggestion(
                kind="answer",
                label=f"The earlier answer to: {_excerpt(last.question)}",
                supply=SuggestedSupply(text=last.answer[:4000]),
            )
        )
    return found[:MAX_SUGGESTIONS]


# A plain-text heading's underline or a ruler ("TRIGGERS\n========"): no words, only noise in a suggestion's label.
_RULE = re.compile(r"(?<!\S)([=\-_~*#+])\1{2,}(?!\S)")


def _excerpt(text: str, limit: int = 80) -> str:
    flat = " ".join(_RULE.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def suggestions_for(state: TurnState) -> list[Suggestion]:
    """The one-click suggestions of a turn's state (for a slot the model asked for)."""
    return _suggestions(
        state.get("sources") or [],
        state.get("available_documents"),
        state.get("blob_names") or [],
        state.get("history") or [],
    )
