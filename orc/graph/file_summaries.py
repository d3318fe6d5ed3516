"""The answer prompt's file summaries: for a question that asks what files are about ("Summarize lease.md", "What
is the tar manual about?"), the stored digests of the files it names, with the spans their facts cite.

Read from storage, never made here: a digest is made when a file is processed (context-digest-spec Task A), so a
summary request costs no model call beyond the answer's own. Any other question reads nothing.
"""

from __future__ import annotations

from orc.contracts import SourceSpan
from orc.documents.catalog.summaries import file_digests_of
from orc.graph.context import TurnContext
from orc.graph.state import TurnState
from orc.models.summaries import summary_request


async def file_summaries(state: TurnState, ctx: TurnContext) -> tuple[str, list[SourceSpan]]:
    """The file-digests section for the turn's question (empty when it asks no summary) and the spans it cites."""
    request = summary_request(state["question"])
    if request is None or ctx.file_summaries is None:
        return "", []
    attached = state.get("blob_names") or []
    names = list(attached) or [document.filename for document in state.get("available_documents") or []]
    wanted = request.documents(names)
    if not wanted:
        return "", []
    focus = state.get("focus_context")
    focus = state.get("focus_context")
    where = (focus.type, focus.id) if focus else None
    return file_digests_of(await ctx.file_summaries(ctx.principal, ctx.conversation_id, where, wanted))
