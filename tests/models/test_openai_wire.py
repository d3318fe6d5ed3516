"""The OpenAI wire path end to end: build_chat_model against a local OpenAI-compatible endpoint."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from orc.models.factory import build_chat_model
from orc.models.guard import forbid_model_requests
from orc.models.metering import ModelMeter
from tests.models.closing import clients_closed_after_each_test, resources  # noqa: F401 (autouse fixture)
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, RunningEndpoint, serve


@tool
def documents__search(query: str) -> str:
    """Search the documents."""
    return query


@pytest.fixture(scope="module")
def running() -> Iterator[RunningEndpoint]:
    yield from serve(OpenAIEndpoint())


@pytest.fixture
def endpoint(running: RunningEndpoint) -> OpenAIEndpoint:
    running.endpoint.reset()
    return running.endpoint


def model(running: RunningEndpoint, max_retries: int = 0) -> BaseChatModel:
    return build_chat_model(
        "openai:test-model",
        base_url=running.base_url,
        api_key=None,
        timeout=10,
        max_retries=max_retries,
        resources=resources(),
    )


async def test_a_tool_call_round_trip_reaches_the_endpoint_and_back(
    running: RunningEndpoint, endpoint: OpenAIEndpoint
) -> None:
    endpoint.reset(
        Reply(tool_calls=[{"id": "call_1", "name": "documents__search", "args": {"query": "rent"}}]),
        Reply(text="Rent is $1,850 [lease.pdf::S3]."),
    )
    bound = model(running).bind_tools([documents__search])
    messages: list[BaseMessage] = [HumanMessage("What is the rent?")]

    with forbid_model_requests():
        planned = await bound.ainvoke(messages)
        assert isinstance(planned, AIMessage)
        messages += [planned, ToolMessage("Monthly rent is $1,850.", tool_call_id="call_1")]
        answered = await bound.ainvoke(messages)

    assert planned.tool_calls == [
        {"name": "documents__search", "args": {"query": "rent"}, "id": "call_1", "type": "tool_call"}
    ]
    assert answered.text == "Rent is $1,850 [lease.pdf::S3]."
    assert endpoint.requests[0]["tools"][0]["function"]["name"] == "documents__search"
    sent = endpoint.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[2]["tool_call_id"] == "call_1"


async def test_a_streamed_answer_arrives_in_several_chunks_with_usage(
    running: RunningEndpoint, endpoint: OpenAIEndpoint
) -> None:
    endpoint.reset(Reply(text="The notice period is 60 days."))
    meter = ModelMeter()

    chunks = [chunk async for chunk in model(running).astream("Notice?", config={"callbacks": [meter]})]

    assert len([chunk for chunk in chunks if chunk.text]) >= 5
    assert "".join(chunk.text for chunk in chunks).strip() == "The notice period is 60 days."
    usage = [chunk.usage_metadata for chunk in chunks if chunk.usage_metadata]
    assert usage and usage[-1]["total_tokens"] == 18
    assert endpoint.requests[0]["stream"] is True
    assert endpoint.requests[0]["stream_options"] == {"include_usage": True}
    assert (meter.calls, meter.usage.total_tokens) == (1, 18)


async def test_a_429_is_retried_after_the_servers_delay_and_then_succeeds(
    running: RunningEndpoint, endpoint: OpenAIEndpoint
) -> None:
    endpoint.reset(Reply(status=429, text="slow down", headers={"retry-after-ms": "10"}), Reply(text="ok"))

    reply = await model(running, max_retries=2).ainvoke("hi")

    assert reply.text == "ok"
    assert len(endpoint.requests) == 2


async def test_without_retries_a_429_surfaces_as_an_error(running: RunningEndpoint, endpoint: OpenAIEndpoint) -> None:
    endpoint.reset(Reply(status=429, text="slow down", headers={"retry-after-ms": "10"}))

    with pytest.raises(openai.RateLimitError):
        await model(running, max_retries=0).ainvoke("hi")
    assert len(endpoint.requests) == 1
