"""Building blocks shared by orc's own chat models (offline and scripted): tool binding, replies, chunks, token
estimates."""

from __future__ import annotations

import asyncio
import json
import re
import time
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolCall
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

__all__ = [
    "Reply",
    "ToolSchemaChatModel",
    "approx_tokens",
    "offered_tools",
    "reply_chunks",
    "reply_result",
    "tool_name",
    "usage_for",
    "word_pieces",
]

# Split before every word that follows whitespace, so the pieces join back to the exact text.
_WORD_BOUNDARY = re.compile(r"(?<=\s)(?=\S)")


@dataclass(frozen=True, slots=True)
class Reply:
    """What a model says: text, tool calls, or both."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


def approx_tokens(text: str) -> int:
    """About four characters per token: close enough for metering, and needs no tokenizer download."""
    return (len(text) + 3) // 4


def usage_for(messages: Sequence[BaseMessage], reply: Reply) -> UsageMetadata:
    """Approximate token usage of one request and its reply."""
    input_tokens = sum(approx_tokens(message.text) for message in messages)
    output_tokens = approx_tokens(reply.text) + sum(
        approx_tokens(call["name"] + json.dumps(call["args"])) for call in reply.tool_calls
    )
    return UsageMetadata(
        input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens
    )


def word_pieces(text: str) -> list[str]:
    """Word-sized pieces of ``text`` (each keeps its trailing whitespace); ``"".join`` gives ``text`` back."""
    return [piece for piece in _WORD_BOUNDARY.split(text) if piece]


def reply_result(reply: Reply, usage: UsageMetadata, metadata: Mapping[str, Any]) -> ChatResult:
    """A one-generation ChatResult for ``reply``."""
    message = AIMessage(
        content=reply.text,
        tool_calls=list(reply.tool_calls),
        usage_metadata=usage,
        response_metadata=dict(metadata),
    )
    return ChatResult(generations=[ChatGeneration(message=message)])


def reply_chunks(reply: Reply, usage: UsageMetadata, metadata: Mapping[str, Any]) -> Iterator[ChatGenerationChunk]:
    """Stream ``reply``: text word by word, then all tool calls in one chunk.

    Usage and response metadata ride on the last chunk only, because merging chunks adds usage numbers
    and concatenates string metadata.
    """
    pieces = word_pieces(reply.text)
    for piece in pieces[:-1] if not reply.tool_calls else pieces:
        yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
    last_text = pieces[-1] if pieces and not reply.tool_calls else ""
    chunks = [
        tool_call_chunk(name=call["name"], args=json.dumps(call["args"]), id=call["id"], index=index)
        for index, call in enumerate(reply.tool_calls)
    ]
    yield ChatGenerationChunk(
        message=AIMessageChunk(
            content=last_text,
            tool_call_chunks=chunks,
            usage_metadata=usage,
            response_metadata=dict(metadata),
            chunk_position="last",
        )
    )


def tool_name(tool: Mapping[str, Any]) -> str:
    """The name of a tool in OpenAI format (``{"type": "function", "function": {...}}``) or a bare function."""
    function = tool.get("function", tool)
    return str(function.get("name", "")) if isinstance(function, Mapping) else ""


class ToolSchemaChatModel(BaseChatModel):
    """Base of orc's own chat models: tools offered with :meth:`bind_tools` reach each request as OpenAI-format
    schemas in its keyword arguments, where :func:`offered_tools` reads them, and LangChain's four entry points
    (``invoke``, ``ainvoke``, ``stream``, ``astream``) all answer with the model's :meth:`_reply`, with approximate
    usage."""

    model_name: str

    @abstractmethod
    def _reply(self, messages: list[BaseMessage], kwargs: Mapping[str, Any], *, streamed: bool) -> Reply:
        """The reply to one request (the model's own logic, without LangChain plumbing)."""

    def _delay(self) -> float:
        """Seconds a request takes after its reply is decided (none by default: the reply is ready at once)."""
        return 0.0

    def _metadata(self, reply: Reply) -> dict[str, Any]:
        return {"model_name": self.model_name, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._reply(messages, kwargs, streamed=False)
        if delay := self._delay():
            time.sleep(delay)
        return reply_result(reply, usage_for(messages, reply), self._metadata(reply))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # The replies are quick and CPU-bound: no executor hop.
        reply = self._reply(messages, kwargs, streamed=False)
        if delay := self._delay():
            await asyncio.sleep(delay)
        return reply_result(reply, usage_for(messages, reply), self._metadata(reply))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages, kwargs, streamed=True)
        if delay := self._delay():
            time.sleep(delay)
        yield from reply_chunks(reply, usage_for(messages, reply), self._metadata(reply))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        reply = self._reply(messages, kwargs, streamed=True)
        if delay := self._delay():
            await asyncio.sleep(delay)
        for chunk in reply_chunks(reply, usage_for(messages, reply), self._metadata(reply)):
            yield chunk

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Offer ``tools`` to the model: they reach each request as OpenAI-format schemas."""
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)


def offered_tools(kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tools a request offers (what ``bind_tools`` put into the call's keyword arguments)."""
    tools = kwargs.get("tools") or []
    return [dict(tool) for tool in tools if isinstance(tool, Mapping)]
