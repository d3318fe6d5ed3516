"""Checkpoint savers (the collection port's, and the embedded SQLite one): a turn paused with interrupt() resumes
on another instance; a new turn reads no checkpoint."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from orc.storage.checkpoints import NEW_TURN, CollectionCheckpointSaver
from orc.storage.memory import MemoryCollectionProvider
from orc.storage.ports import CollectionProvider
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
