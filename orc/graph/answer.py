"""answer: the final, streamed answer from the centralized prompt, with citations resolved to real spans."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast
from xml.sax.saxutils import escape, quoteattr

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langgraph.runtime import Runtime
from langgraph.types import Command

from orc.contracts import Citation, Grounding, SourceSpan
from orc.conversations import HISTORY_TURNS
from orc.documents.catalog.attachments import unavailable_note
from orc.graph.answer_checks import corrected_answer
from orc.graph.answer_prompt import answer_system_prompt
from orc.graph.citations import extract_citations, unique_sources
from orc.graph.context import TurnContext
from orc.graph.context_block import render_context_block
from orc.graph.events import TokenEvent
from orc.graph.file_summaries import file_summaries
from orc.graph.grounding import MarkerFilter, grounding_report
from orc.graph.packing import pack_sources
from orc.graph.pause import context_request_before_tools, emit_pause
from orc.graph.progress import emit, progress
from orc.graph.request_context import requested_context, with_request_context
from orc.graph.state import PriorTurn, SourceContext, TurnState
from orc.graph.suggestions import FollowUpFilter, follow_up_suggestions
from orc.graph.tool_router import AfterAnswer, after_answer, answer_tools, requested_calls
from orc.models.budget import HistoryTurn, history_within
from orc.models.declines import is_decline
from orc.models.places import places_to_look
from orc.models.sheets import Mode
from orc.models.tokens import TokenCounter
from orc.output_policy import OutputStream
from orc.telemetry import model_call

MAX_ANSWER_SOURCES = 40
"""The most sources one answer request carries (the token budget usually stops it first)."""


def tool_answers(state: TurnState) -> str:
    """What the tools concluded (sources are listed separately)."""
    parts = []
    for doc in state.get("context_docs") or []:
        status = ' status="error"' if doc.error else ""
        parts.append(f"<tool_answer tool={quoteattr(doc.tool)}{status}>\n{escape(doc.text)}\n</tool_answer>")
    return "\n".join(parts)


def interaction_mode(state: TurnState) -> Mode:
    """Which prompt sheet the answer uses: a resumed turn's, a tool-planned turn's, or a document turn's."""
    if state.get("supplied") or state.get("handoff_note"):
        return "resumed"
    if state.get("planning_messages"):
        return "planned"
    return "document"


def context_labels(source_contexts: Mapping[str, SourceContext]) -> dict[str, str]:
    """SourceRef → ``folder legal (historical context)`` for sources that came from a context."""
    labels = {}
    for ref, where in source_contexts.items():
        if where.type and where.type != "session":
            suffix = " (historical context)" if where.origin == "historical" else ""
            labels[ref] = f"{where.type} {where.id}{suffix}"
    return labels


def non_focus_note(answer: str, citations: Sequence[Citation], source_contexts: Mapping[str, SourceContext]) -> str:
    """A sentence naming the historical contexts the answer cites, unless the answer already names them.

    The spec requires the answer to say when it used a non-focus context; a model may forget, so it is checked.
    """
    unnamed: list[str] = []
    for citation in citations:
        where = source_contexts.get(citation.ref)
        if not where or where.origin != "historical":
            continue
        label = f"{where.type} {where.id}"
        # "Explicitly" means naming the context as a historical one; quoting a text that mentions it is not that.
        said = "historical" in answer.lower() and where.id in answer
        if not said and label not in unnamed:
            unnamed.append(label)
    if not unnamed:
        return ""
    return f"\n\n(This answer uses the historical context {', '.join(unnamed)}, not the focus context.)"


def answer_sources(state: TurnState, counter: TokenCounter, budget: int) -> list[SourceSpan]:
    """This turn's evidence, best first, and the spans the previous answer cited, packed within ``budget`` tokens
    (:func:`orc.graph.packing.pack_sources`: the best whole — more of them when a vector leg ranked them —, later
    ones as excerpts around the question's words)."""
    question = state.get("standalone_question") or state.get("question") or ""
    ranked = unique_sources(state.get("sources") or [], MAX_ANSWER_SOURCES)
    retrieval = state.get("retrieval")
    hybrid = retrieval is not None and "vector" in retrieval.legs
    return pack_sources(ranked, question, counter, budget=budget, kept=state.get("prior_sources") or [], hybrid=hybrid)


def history_messages(
    turns: Sequence[PriorTurn], counter: TokenCounter, budget: int, max_turns: int
) -> list[BaseMessage]:
    """The recent exchanges that fit ``budget`` as Human/AI message pairs, oldest first (chat-system-reference
    "Cost Management": older messages shortened first, then the oldest turns dropped)."""
    kept = history_within(
        [HistoryTurn(question=turn.question, answer=turn.answer) for turn in turns],
        counter,
        budget=budget,
        max_turns=max_turns,
    )
    messages: list[BaseMessage] = []
    for turn in kept:
        messages += [HumanMessage(turn.question), AIMessage(turn.answer)]
    return messages


async def _request(
    model: Runnable[list[BaseMessage], BaseMessage],
    messages: list[BaseMessage],
    ctx: TurnContext,
    markers: MarkerFilter,
    output: OutputStream,
    follow_ups: FollowUpFilter,
    *,
    stream: bool,
    keep_reply: bool,
) -> tuple[BaseMessage | None, str]:
    """One answer request: streamed token by token when someone reads the events, else whole. Returns the reply
    (when ``keep_reply``: a request that may call tools needs it; others need only the text) and its text, without
    the follow-up questions the model wrote at its end (``follow_ups`` keeps them) and the citation markers
    ``markers`` does not keep, cleaned by the output policy (``output``) before any of it is sent."""
    if not stream:
        whole = await model.ainvoke(messages)
        ctx.meter.record(whole)
        text = markers.feed(follow_ups.strip(whole.text)) + markers.flush()
        return whole, output.policy.text(text, output.removed).strip()
    pieces: list[str] = []
    metered: list[BaseMessage] = []
    reply: BaseMessage | None = None
    async for chunk in model.astream(messages):
        if keep_reply:
            reply = chunk if reply is None else cast(AIMessageChunk, reply) + cast(AIMessageChunk, chunk)
        # Text streams at once (held back only from an opening "[" until it is known to be a real marker); text a
        # model writes before asking for tools streams as well.
        piece = output.feed(markers.feed(follow_ups.feed(str(chunk.text))))
        if piece:
            pieces.append(piece)
            emit(TokenEvent(type="token", text=piece))
        if isinstance(chunk, AIMessage) and chunk.usage_metadata:
            metered.append(chunk)
    tail = output.feed(markers.feed(follow_ups.flush()) + markers.flush()) + output.flush()
    if tail:
        pieces.append(tail)
        emit(TokenEvent(type="token", text=tail))
    ctx.meter.record(*metered)
    return reply, "".join(pieces).strip()


async def answer_prompt(state: TurnState, ctx: TurnContext) -> tuple[list[SourceSpan], list[BaseMessage]]:
    """The answer request's sources and messages: the system prompt (sources, supplied passages, contexts, tool
    answers, the session's and the summarized files' digests), the history within its budget, the question."""
    sources = answer_sources(state, ctx.token_counter, ctx.sources_tokens)
    supplied = state.get("supplied") or []
    digest = await ctx.session_digest(ctx.principal, ctx.conversation_id) if ctx.session_digest else ""
    # "Summarize lease.md": the file's stored digest, and the spans its facts cite among the sources.
    summaries, summarized = await file_summaries(state, ctx)
    sources = unique_sources([*sources, *summarized], len(sources) + len(summarized))
    system = answer_system_prompt(
        interaction_mode(state),
        sources=[source for source in sources if source not in supplied],
        supplied=supplied,
        contexts=render_context_block(state),
        tool_answers=tool_answers(state),
        digest=digest,
        file_digests=summaries,
        labels=context_labels(state.get("source_contexts") or {}),
    )
    history = history_messages(state.get("history") or [], ctx.token_counter, ctx.history_tokens, HISTORY_TURNS)
    return sources, [SystemMessage(system), *history, HumanMessage(state["question"])]


def finished_answer(
    state: TurnState,
    text: str,
    sources: list[SourceSpan],
    grounding: Grounding,
    output: OutputStream,
    follow_ups: FollowUpFilter,
) -> TurnState:
    """The answer's update: its text with the notes it owes (historical contexts cited, documents unavailable, a
    handoff's note, streamed as it is added), its citations, the places to look when it declines, and its
    suggestions, all through the output policy that cleaned the streamed text."""
    policy, removed = output.policy, output.removed
    citations = [
        citation.model_copy(update={"quote": policy.text(citation.quote, removed)})
        for citation in extract_citations(text, sources)
    ]
    # A decline still says where to read: the closest of the passages the answer was given (not citations).
    places = (
        [
            place.model_copy(update={"excerpt": policy.text(place.excerpt, removed)})
            for place in places_to_look(state.get("standalone_question") or state["question"], sources)
        ]
        if not citations and is_decline(text)
        else []
    )
    note = policy.text(
        non_focus_note(text, citations, state.get("source_contexts") or {})
        + unavailable_note(state.get("unavailable_documents") or [])
        + (state.get("handoff_note") or ""),
        removed,
    )
    if note:
        emit(TokenEvent(type="token", text=note))
    return {
        "answer": text + note,
        "citations": citations,
        "places_to_look": places,
        "grounding": grounding,
        # The model's own follow-ups when it wrote them (no request of their own), else made from the sources.
        "suggestions": policy.texts(
            follow_ups.suggestions or follow_up_suggestions(state["question"], sources, citations, text), removed
        ),
        "sanitized": removed.as_dict(),
    }


async def answer(state: TurnState, runtime: Runtime[TurnContext]) -> Command[AfterAnswer]:
    """Stream the answer token by token and cite the spans it names.

    After a planned tool round the request also offers the tools (:func:`answer_tools`), with the round's calls
    and results: a reply that calls tools goes back to the executor instead of ending the turn.
    """
    ctx = runtime.context
    if ctx.context_requests and state.get("rounds", 0) == 0 and not state.get("context_request"):
        # No tool ran (context_builder asks after a tool round): the needs analyzer still runs before the answer
        # request, so a turn with nothing to answer from asks for it instead of answering that it found nothing.
        needed = await context_request_before_tools(state, ctx)
        if needed:
            emit_pause(needed)
            return Command(update={"context_request": needed}, goto="context_pause")
    progress("answer", "Writing the answer", 80)
    sources, messages = await answer_prompt(state, ctx)
    offered = await answer_tools(state, ctx)
    tools = with_request_context(offered) if ctx.offers_request_context else offered
    if tools:
        # The calls made so far and their results (the planning prompt's own system and question aside), after
        # the question they answer.
        messages += list(state.get("planning_messages") or [])[2:]
    model = ctx.model.bind_tools(tools) if tools else ctx.model
    # Grounding in code: a marker that names no span given to the model never reaches the client.
    markers = MarkerFilter({source.ref for source in sources})
    # The output policy in the pipeline: what is streamed, stored and returned is the cleaned text.
    policy = ctx.output_policy
    output = policy.stream()
    follow_ups = FollowUpFilter()
    with model_call("answer"):
        reply, text = await _request(
            model, messages, ctx, markers, output, follow_ups, stream=ctx.stream_tokens, keep_reply=bool(tools)
        )
    asked = requested_context(reply, state) if ctx.offers_request_context else []
    if asked:
        # The model asked the user for context: the turn pauses here, as when the rules ask.
        emit_pause(asked)
        return Command(update={"context_request": asked}, goto="context_pause")
    # Only a call to a tool this request offered (request_context aside: it pauses, above) goes to the executor. A
    # malformed request_context or a tool the model made up is dropped: sent back, it would come back to this node
    # again and again, with nothing bounding the loop but the graph's recursion limit.
    calls = requested_calls(reply, offered) if offered and reply is not None else []
    if not calls and not text and isinstance(reply, AIMessage) and reply.tool_calls:
        # The reply was nothing but such calls: asked once more, without tools, the turn still ends with an answer.
        output = policy.stream()
        follow_ups = FollowUpFilter()
        with model_call("answer"):
            _, text = await _request(
                ctx.model, messages, ctx, markers, output, follow_ups, stream=ctx.stream_tokens, keep_reply=False
            )
    if calls and reply is not None:
        progress("answer", "Consulting more documents first", 85)
        planned = list(state.get("planning_messages") or [])
        return Command(
            update={"pending_tool_calls": calls, "planning_messages": [*planned, reply]}, goto=after_answer(calls)
        )
    grounding = grounding_report(text, markers.removed)
    if ctx.corrective_retry and sources and grounding.mostly_uncited:
        text, grounding = await corrected_answer(model, messages, text, grounding, ctx, markers)
        text = policy.text(text, output.removed)
    update = finished_answer(state, text, sources, grounding, output, follow_ups)
    progress("answer", "Done", 100)
    if ctx.finished is not None:
        ctx.finished({**state, **update})
    return Command(update=update, goto=after_answer([]))
