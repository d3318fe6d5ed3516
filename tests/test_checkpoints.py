"""Checkpoint savers (the collection port's, and the embedded SQLite one): a turn paused with interrupt() resumes
on another instance; a new turn reads no checkpoint; the turn's typed state comes back whole, its types registered."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.serde.event_hooks import SerdeEvent, register_serde_event_listener
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from orc.contracts import (
    Citation,
    FileRef,
    Grounding,
    PlaceToLook,
    RetrievalLegs,
    SourceSpan,
    ToolCallRecord,
    UnavailableDocument,
    Usage,
)
from orc.conversations import FocusContext
from orc.conversations.context_requests import RequiredSlot, SuggestedSupply, Suggestion
from orc.graph import build_graph
from orc.graph.state import (
    ListedDocument,
    PlannedCall,
    PriorTurn,
    SourceContext,
    ToolAnswer,
    ToolResult,
    TurnState,
    fresh_turn_input,
)
from orc.storage.checkpoints import NEW_TURN, CollectionCheckpointSaver
from orc.storage.memory import MemoryCollectionProvider
from orc.storage.ports import CollectionProvider, StoredItem
from orc.storage.sqlite import SqliteCollectionProvider
from orc.storage.sqlite_checkpoints import open_embedded_checkpointer
from tests.storage.conftest import emulator_cosmos_provider


class State(TypedDict, total=False):
    question: str
    context: str
    answer: str


def ask_for_context(state: State) -> State:
    supplied = interrupt({"needs": "context", "question": state["question"]})
    return {"context": str(supplied)}


def answer(state: State) -> State:
    return {"answer": f"{state['question']} -> {state['context']}"}


Savers = Callable[[], Awaitable[BaseCheckpointSaver[str]]]
"""Opens another saver instance over the same checkpoint store, as a second process would."""


def build(saver: BaseCheckpointSaver[str]) -> CompiledStateGraph[State, None, State, State]:
    graph = StateGraph(State)
    graph.add_node("ask_for_context", ask_for_context)
    graph.add_node("answer", answer)
    graph.add_edge(START, "ask_for_context")
    graph.add_edge("ask_for_context", "answer")
    graph.add_edge("answer", END)
    return graph.compile(checkpointer=saver)


@pytest.fixture(params=["embedded", "memory", "sqlite", pytest.param("cosmos", marks=pytest.mark.emulator)])
async def savers(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Savers]:
    async with AsyncExitStack() as stack:
        if request.param == "embedded":

            async def open_saver() -> BaseCheckpointSaver[str]:
                return await stack.enter_async_context(open_embedded_checkpointer(tmp_path / "checkpoints.sqlite3"))

            yield open_saver
            return
        provider: CollectionProvider
        if request.param == "memory":
            provider = MemoryCollectionProvider()
        elif request.param == "sqlite":
            provider = SqliteCollectionProvider(tmp_path / "cp.sqlite3")
        else:
            provider = emulator_cosmos_provider(request.getfixturevalue("cosmos_emulator"))
        stack.push_async_callback(provider.aclose)

        async def collection_saver() -> BaseCheckpointSaver[str]:
            return CollectionCheckpointSaver(await provider.collection("checkpoints"))

        yield collection_saver


async def test_a_paused_turn_resumes_on_another_instance(savers: Savers) -> None:
    config = {"configurable": {"thread_id": f"org/user/{uuid.uuid4().hex}"}}
    first = build(await savers())
    paused = await first.ainvoke({"question": "What is the fee?"}, config)
    assert paused["__interrupt__"][0].value == {"needs": "context", "question": "What is the fee?"}

    # A second instance: new saver and graph over the same store.
    second = build(await savers())
    pending = await second.aget_state(config)
    assert pending.next == ("ask_for_context",)
    resumed = await second.ainvoke(Command(resume="the fee schedule"), config)

    assert resumed["answer"] == "What is the fee? -> the fee schedule"
    assert (await second.aget_state(config)).next == ()


async def test_history_lists_checkpoints_newest_first_and_filters_by_metadata(savers: Savers) -> None:
    saver = await savers()
    graph = build(saver)
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    await graph.ainvoke({"question": "q"}, config)
    await graph.ainvoke(Command(resume="c"), config)

    history = [state async for state in graph.aget_state_history(config)]
    assert len(history) >= 3
    ids = [state.config["configurable"]["checkpoint_id"] for state in history]
    assert ids == sorted(ids, reverse=True)
    inputs = [t async for t in saver.alist(config, filter={"source": "input"})]
    assert inputs and all(t.metadata["source"] == "input" for t in inputs)
    assert len([t async for t in saver.alist(config, limit=2)]) == 2


async def test_threads_are_independent_and_deleting_one_leaves_the_other(savers: Savers) -> None:
    saver = await savers()
    graph = build(saver)
    prefix = uuid.uuid4().hex
    one = {"configurable": {"thread_id": f"org/{prefix}/one"}}
    two = {"configurable": {"thread_id": f"org/{prefix}/two"}}
    await graph.ainvoke({"question": "first"}, one)
    await graph.ainvoke({"question": "second"}, two)

    await saver.adelete_thread(f"org/{prefix}/one")

    assert await saver.aget_tuple(one) is None
    assert (await graph.aget_state(two)).values["question"] == "second"


async def test_a_new_turn_reads_no_checkpoint_but_a_resume_reads_the_latest(savers: Savers) -> None:
    saver = await savers()
    thread = {"thread_id": f"org/user/{uuid.uuid4().hex}"}
    await build(saver).ainvoke({"question": "What is the fee?"}, {"configurable": thread})

    assert await saver.aget_tuple({"configurable": {**thread, NEW_TURN: True}}) is None
    latest = await saver.aget_tuple({"configurable": thread})
    assert latest is not None and latest.checkpoint["channel_values"]["question"] == "What is the fee?"


def every_field_set() -> TurnState:
    """A turn's state in the middle of a tool round, every field holding what the nodes write."""
    span = SourceSpan(ref="lease.txt::S1", document="lease.txt", span_id="S1", page=2, text="Rent is 900 euros.")
    call = PlannedCall(id="c1", name="documents.search", model_name="documents__search", args={"query": "rent"})
    state = fresh_turn_input("What is the rent?", ["lease.txt"], FocusContext(type="usecase", id="u1"))
    state.update(
        conversation_header=StoredItem(id="conv", partition_key="org/user", body={"seq": 3}, etag='"e1"'),
        standalone_question="What is the monthly rent?",
        uploaded_file_refs=[FileRef(file_id="f-1", blob_name="lease.txt")],
        last_mcp_tool_used="documents.search",
        historical_contexts=[FocusContext(type="folder", id="f9")],
        history=[PriorTurn(question="What is the deposit?", answer="Two months [lease.txt::S2].")],
        prior_sources=[span],
        available_documents=[
            ListedDocument(
                filename="lease.txt", context_type="session", context_id="conv", status="ready", origin="session"
            )
        ],
        pending_tool_calls=[call],
        planning_messages=[
            SystemMessage("plan"),
            HumanMessage("What is the monthly rent?"),
            AIMessage("", tool_calls=[{"id": "c1", "name": "documents__search", "args": {"query": "rent"}}]),
            ToolMessage("1 passage", tool_call_id="c1", name="documents__search"),
        ],
        tool_results=[
            ToolResult(
                id="c1",
                name="documents.search",
                model_name="documents__search",
                arguments={"query": "rent"},
                structured={"results": []},
                text="",
                is_error=False,
                duration_ms=1.5,
            )
        ],
        tool_records=[ToolCallRecord(name="documents.search", arguments={"query": "rent"}, duration_ms=1.5)],
        context_docs=[ToolAnswer(tool="documents.search", text="1 passage")],
        sources=[span],
        source_contexts={"lease.txt::S1": SourceContext(origin="historical", type="folder", id="f9")},
        rounds=1,
        cache="hit",
        tool_model_calls=1,
        tool_usage=Usage(input_tokens=10, output_tokens=5, total_tokens=15),
        answer="The rent is 900 euros [lease.txt::S1].",
        citations=[Citation(ref=span.ref, document=span.document, span_id="S1", page=2, quote=span.text)],
        places_to_look=[
            PlaceToLook(ref=span.ref, document=span.document, span_id="S1", page=2, section="Rent", excerpt=span.text)
        ],
        unavailable_documents=[
            UnavailableDocument(document_id="f-2", name="scan.pdf", status="failed", reason="no text layer")
        ],
        retrieval_rounds=2,
        retrieval=RetrievalLegs(legs=["lexical", "vector"], fusion="rrf", embeddings="azure:embed"),
        grounding=Grounding(cited_sentences=1, uncited_sentences=0, removed_markers=1),
        suggestions=["What does lease.txt say about the deposit?"],
        sanitized={"html": 1, "images": 1, "links": 0},
        context_request=[
            RequiredSlot(
                slot="evidence",
                kind="evidence",
                description="Paste the passage",
                suggestions=[Suggestion(kind="span", label="lease", supply=SuggestedSupply(source_ref=span.ref))],
            )
        ],
        supplied=[span],
        handoff_note="(Answered without the requested context.)",
    )
    return state


async def write_and_read(saver: BaseCheckpointSaver[str], values: TurnState) -> tuple[dict[str, Any], list[SerdeEvent]]:
    """Write ``values`` as a checkpoint's channels and read them back, with the serializer's allowlist events."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = dict(values)
    config = {"configurable": {"thread_id": f"org/user/{uuid.uuid4().hex}", "checkpoint_ns": ""}}
    events: list[SerdeEvent] = []
    unregister = register_serde_event_listener(events.append)
    try:
        written = await saver.aput(config, checkpoint, {}, {})
        read = await saver.aget_tuple(written)
    finally:
        unregister()
    assert read is not None
    return read.checkpoint["channel_values"], events


async def test_a_turn_state_with_every_typed_field_round_trips_with_its_types_registered(savers: Savers) -> None:
    state = every_field_set()
    saver = build_graph(await savers()).checkpointer
    assert isinstance(saver, BaseCheckpointSaver)

    values, events = await write_and_read(saver, state)

    assert set(state) == set(TurnState.__annotations__)
    assert all(value not in (None, [], {}, "", 0) for value in state.values())
    assert values == state
    assert events == []  # no "Deserializing unregistered type", nothing blocked


async def test_a_saver_reads_back_no_class_that_no_graph_registered(savers: Savers) -> None:
    values, events = await write_and_read(await savers(), {"uploaded_file_refs": [FileRef(file_id="f", blob_name="b")]})

    assert not any(isinstance(ref, FileRef) for ref in values["uploaded_file_refs"])
    assert [(event["kind"], event["name"]) for event in events] == [("msgpack_blocked", "FileRef")]
