"""answer: the final, streamed answer from the centralized prompt, with citations resolved to real spans."""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from orc.citations import extract_citations, unique_sources
from orc.contracts import SourceSpan
from orc.graph.context import TurnContext
from orc.graph.progress import emit, progress
from orc.graph.state import TurnState
from orc.prompting import format_sources, load_prompt

MAX_ANSWER_SOURCES = 12


def context_block(state: TurnState) -> str:
    """What the tools concluded, for the answer prompt (sources are listed separately)."""
    parts = []
    for doc in state.get("context_docs") or []:
        status = ' status="error"' if doc.get("error") else ""
        parts.append(f"<tool_answer tool={quoteattr(doc['tool'])}{status}>\n{escape(doc['text'])}\n</tool_answer>")
    return "\n".join(parts)


async def answer(state: TurnState, runtime: Runtime[TurnContext]) -> TurnState:
    """Stream the answer token by token and cite the spans it names."""
    ctx = runtime.context
    progress("answer", "Writing the answer", 80)
    sources = unique_sources(
        (SourceSpan.model_validate(source) for source in state.get("sources") or []), MAX_ANSWER_SOURCES
    )
    system = load_prompt("answer.system").render(sources=format_sources(sources), context_block=context_block(state))
    chunks: list[str] = []
    async for chunk in ctx.model.astream([SystemMessage(system), HumanMessage(state["standalone_question"])]):
        piece = str(chunk.text)
        if piece:
            chunks.append(piece)
            emit({"type": "token", "text": piece})
    text = "".join(chunks).strip()
    citations = extract_citations(text, sources)
    progress("answer", "Done", 100)
    return {"answer": text, "citations": [citation.model_dump() for citation in citations]}
