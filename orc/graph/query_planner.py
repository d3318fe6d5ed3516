"""query_planner: load history, seed the turn from the latest assistant message, say what to retrieve for.

No model call: a follow-up is not rewritten by a model before retrieval (that call would sit in front of the first
answer token). Retrieval gets the question plus the key words of the previous question and the salient words of the
sentences the previous answer cited (:func:`orc.models.rewriting.rewrite_follow_up`, deterministic) — with any
model, since the planning model and document_chat both read this retrieval question — the previous answer's cited
spans stay evidence, and the answer model reads the recent history as messages and resolves "and the second one?"
itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.runtime import Runtime
from langgraph.types import Command

from orc.contracts import SourceSpan
from orc.conversations import HISTORY_TURNS, FocusContext
from orc.conversations.models import Turn
from orc.documents.catalog.contexts import historical_from_turns
from orc.documents.records import ContextRef
from orc.graph.context import TurnContext
from orc.graph.progress import progress
from orc.graph.state import PriorTurn, TurnState
from orc.graph.tool_router import AfterPlanner, after_planner
from orc.models.rewriting import rewrite_follow_up


async def query_planner(state: TurnState, runtime: Runtime[TurnContext]) -> Command[AfterPlanner]:
    """Seed ``uploaded_file_refs``, ``last_mcp_tool_used``, the historical contexts, the history and the previous
    answer's cited spans, and the retrieval question (no model call). Then on to the executor with attached
    files, else to tool_router."""
    return Command(update=await _plan_query(state, runtime.context), goto=after_planner(state))


def cited_spans(turn: Turn, blob_names: Sequence[str]) -> list[SourceSpan]:
    """The spans ``turn``'s answer cited, as evidence for the next turn (its quotes, the text the reader saw).

    With attached files, only spans of those files: a user who switched documents asks about the new ones.
    """
    names = set(blob_names)
    return [
        SourceSpan(
            ref=c.ref, document=c.document, document_id=c.document_id, span_id=c.span_id, page=c.page, text=c.quote
        )
        for c in turn.assistant.citations
        if c.quote and (not names or c.document in names)
    ]


def _cited(turn: Turn) -> tuple[str, str]:
    """A turn's answer as the follow-up rewrite reads it: the spans it cited, each with its marker (what the
    answer was about, in the documents' own words, whatever model wrote it); the answer itself when it cited
    nothing."""
    quoted = [f"{citation.quote} [{citation.ref}]" for citation in turn.assistant.citations if citation.quote]
    return ("assistant", " ".join(quoted) if quoted else turn.assistant.content)


async def _plan_query(state: TurnState, ctx: TurnContext) -> TurnState:
    progress("query_planner", "Reading the conversation", 5)
    snapshot = await ctx.conversations.load(ctx.principal, ctx.conversation_id, HISTORY_TURNS)
    turns = snapshot.turns
    question = state["question"]
    focus = state.get("focus_context")
    current = ContextRef.parse(focus.type, focus.id) if focus else None
    historical = [FocusContext(type=ref.type, id=ref.id) for ref in historical_from_turns(turns, current)]
    if not turns:
        return {
            "standalone_question": question,
            "uploaded_file_refs": [],
            "last_mcp_tool_used": None,
            "conversation_header": snapshot.header,
            "historical_contexts": historical,
        }

    latest = turns[-1]
    exchanged = [(role, text) for turn in turns for role, text in (("user", turn.user.content), _cited(turn))]
    return {
        "standalone_question": rewrite_follow_up(question, exchanged),
        "uploaded_file_refs": list(latest.assistant.uploaded_file_refs),
        "last_mcp_tool_used": latest.assistant.last_mcp_tool_used,
        "conversation_header": snapshot.header,
        "historical_contexts": historical,
        "history": [PriorTurn(question=turn.user.content, answer=turn.assistant.content) for turn in turns],
        "prior_sources": cited_spans(latest, state.get("blob_names") or []),
    }
