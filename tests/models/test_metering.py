"""ModelMeter counting requests and summing token usage through LangChain callbacks."""

from __future__ import annotations

import asyncio
from uuid import uuid4

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from orc.contracts import Usage
from orc.models.metering import ModelMeter, usage_of
from orc.models.offline import OfflineExtractiveModel
from orc.testing import ScriptedChatModel


async def test_every_request_is_counted_and_its_usage_summed() -> None:
    meter = ModelMeter()
    model = OfflineExtractiveModel()

    first = await model.ainvoke("hello", config={"callbacks": [meter]})
    second = await model.ainvoke("again", config={"callbacks": [meter]})

    assert meter.calls == 2
    assert first.usage_metadata and second.usage_metadata
    expected = first.usage_metadata["total_tokens"] + second.usage_metadata["total_tokens"]
    assert meter.usage.total_tokens == expected
    assert meter.usage.input_tokens + meter.usage.output_tokens == expected


async def test_streamed_requests_are_metered_like_invoked_ones() -> None:
    meter = ModelMeter()

    chunks = [
        chunk async for chunk in ScriptedChatModel(["one two three"]).astream("hi", config={"callbacks": [meter]})
    ]

    assert meter.calls == 1
    assert meter.usage.output_tokens == sum(c.usage_metadata["output_tokens"] for c in chunks if c.usage_metadata)


async def test_concurrent_requests_are_all_counted() -> None:
    meter = ModelMeter()
    model = ScriptedChatModel([f"reply {n}" for n in range(50)])

    await asyncio.gather(*(model.ainvoke("hi", config={"callbacks": [meter]}) for _ in range(50)))

    assert meter.calls == 50
    assert meter.usage.output_tokens > 0


def test_sync_requests_are_metered_too() -> None:
    meter = ModelMeter()

    OfflineExtractiveModel().invoke("hi", config={"callbacks": [meter]})

    assert meter.calls == 1


def test_provider_token_usage_is_used_when_messages_carry_none() -> None:
    result = LLMResult(
        generations=[[ChatGeneration(message=AIMessage("x"))]],
        llm_output={"token_usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}},
    )

    assert usage_of(result) == Usage(input_tokens=7, output_tokens=3, total_tokens=10)


def test_a_failed_request_counts_as_a_call_without_usage() -> None:
    meter = ModelMeter()
    meter.on_chat_model_start({}, [[HumanMessage("hi")]], run_id=uuid4())

    assert (meter.calls, meter.usage) == (1, Usage())


async def test_recorded_replies_count_one_request_each_with_their_usage() -> None:
    meter = ModelMeter()
    model = ScriptedChatModel(["one two three", "four five"])

    invoked = await model.ainvoke("hi")
    meter.record(invoked)
    chunks = [chunk async for chunk in model.astream("again")]
    meter.record(*chunks)

    streamed = sum(c.usage_metadata["total_tokens"] for c in chunks if c.usage_metadata)
    assert meter.calls == 2
    assert invoked.usage_metadata is not None
    assert meter.usage.total_tokens == invoked.usage_metadata["total_tokens"] + streamed > 0
