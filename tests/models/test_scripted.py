"""orc.testing's scripted and function models: replay, recording, streaming, latency, exhaustion."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

import orc.testing
from orc.testing import FunctionChatModel, ScriptedChatModel, ScriptExhausted


@tool
def documents__search(query: str) -> str:
    """Search the documents."""
    return query


async def test_steps_are_replayed_in_order_as_tool_calls_then_text() -> None:
    model = ScriptedChatModel([[{"name": "documents__search", "args": {"query": "rent"}}], "Rent is $1,850."])
    bound = model.bind_tools([documents__search])

    first = await bound.ainvoke("What is the rent?")
    second = await bound.ainvoke("What is the rent?")

    assert first.tool_calls == [
        {"name": "documents__search", "args": {"query": "rent"}, "id": "call_0", "type": "tool_call"}
    ]
    assert second.text == "Rent is $1,850."
    assert model.remaining == 0


async def test_every_request_is_recorded_with_the_tools_it_offered() -> None:
    model = ScriptedChatModel(["a", "b"])

    await model.bind_tools([documents__search]).ainvoke([HumanMessage("with tools")])
    await model.ainvoke([HumanMessage("without tools")])

    assert [request.tool_names for request in model.requests] == [["documents__search"], []]
    assert model.requests[0].messages[0].text == "with tools"
    assert model.calls == 2


async def test_an_exhausted_script_fails_loudly() -> None:
    model = ScriptedChatModel(["only one"])
    await model.ainvoke("hi")

    with pytest.raises(ScriptExhausted, match="only 1 step"):
        await model.ainvoke("hi again")


async def test_an_exception_step_is_raised_to_the_caller() -> None:
    model = ScriptedChatModel([TimeoutError("model timed out")])

    with pytest.raises(TimeoutError, match="model timed out"):
        await model.ainvoke("hi")


async def test_text_streams_token_by_token_with_usage_on_the_result() -> None:
    model = ScriptedChatModel(["The notice period is 60 days."])

    chunks = [chunk async for chunk in model.astream("hi")]

    assert [chunk.text for chunk in chunks] == ["The ", "notice ", "period ", "is ", "60 ", "days."]
    assert sum(chunk.usage_metadata["output_tokens"] for chunk in chunks if chunk.usage_metadata) > 0


async def test_tool_calls_stream_as_a_single_chunk() -> None:
    model = ScriptedChatModel([[{"name": "documents__search", "args": {"query": "x"}, "id": "c1"}]])

    chunks = [chunk async for chunk in model.astream("hi")]

    assert len(chunks) == 1
    assert chunks[0].tool_calls == [
        {"name": "documents__search", "args": {"query": "x"}, "id": "c1", "type": "tool_call"}
    ]


async def test_latency_is_awaited_so_concurrent_requests_overlap() -> None:
    model = ScriptedChatModel(["a", "b", "c", "d"], latency=60)

    asked = [asyncio.create_task(model.ainvoke("hi")) for _ in range(4)]
    try:
        async with asyncio.timeout(60):
            while model.calls < 4:  # noqa: ASYNC110 - the model records requests; it has no event to wait on
                await asyncio.sleep(0)
        # All four requests are in their latency at once: a blocking wait would have finished the first ones first.
        assert not any(task.done() for task in asked)
    finally:
        for task in asked:
            task.cancel()
        await asyncio.gather(*asked, return_exceptions=True)


async def test_a_function_model_answers_from_the_messages_and_offered_tools() -> None:
    def respond(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
        if tools and not any(isinstance(m, ToolMessage) for m in messages):
            name = tools[0]["function"]["name"]
            return AIMessage("", tool_calls=[{"name": name, "args": {"query": messages[-1].text}, "id": None}])
        return f"seen {len(messages)} messages"

    model = FunctionChatModel(respond)
    bound = model.bind_tools([documents__search])

    planned = await bound.ainvoke("rent?")
    answered = await model.ainvoke("rent?")

    assert planned.tool_calls[0]["args"] == {"query": "rent?"}
    assert planned.tool_calls[0]["id"] == "call_0"
    assert answered.text == "seen 1 messages"


def test_the_sync_api_replays_the_script_too() -> None:
    model = ScriptedChatModel(["sync one", "sync two"])

    assert model.invoke("a").text == "sync one"
    assert "".join(chunk.text for chunk in model.stream("b")) == "sync two"


def test_all_matches_the_public_api() -> None:
    public = {name for name in vars(orc.testing) if not name.startswith("_")}
    modules = {
        "scripted",
        "storage",
        "embeddings",
        "pytest_plugin",
        "conformance",
    }  # submodules, once something imported them

    assert set(orc.testing.__all__) == public - modules
