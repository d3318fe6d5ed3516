"""Counting model requests and their token usage through LangChain callbacks."""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from orc.contracts import Usage
from orc.telemetry import record_model_call

__all__ = ["ModelMeter", "cache_read_tokens", "message_usage", "usage_of"]


class ModelMeter(BaseCallbackHandler):
    """Counts chat-model requests and sums their reported token usage.

    Either record each request's reply yourself (:meth:`record`), as the turn graph does, or pass the meter in
    ``config={"callbacks": [meter]}``. The graph records: a callback on the graph run would make LangChain set
    up callback managers for every node, edge and model request of the turn, a cost paid on every model
    request. As a callback it is a synchronous handler that runs inline, so async callback managers call it
    directly on the event loop instead of in an executor. A lock keeps the sums right when requests run
    concurrently on several threads.
    """

    run_inline = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._usage = Usage()

    @property
    def calls(self) -> int:
        """How many chat-model requests started."""
        with self._lock:
            return self._calls

    @property
    def usage(self) -> Usage:
        """The token usage the models reported, summed."""
        with self._lock:
            return self._usage

    def record(self, *replies: BaseMessage) -> None:
        """Count one request whose reply is ``replies``: the message, or the chunks of a streamed reply (only
        those that carry ``usage_metadata`` are needed)."""
        total = Usage()
        cached = 0
        for reply in replies:
            total = total + message_usage(reply)
            cached += cache_read_tokens(reply)
        with self._lock:
            self._calls += 1
            self._usage = self._usage + total
        record_model_call(total.input_tokens, total.output_tokens, cached)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Count one request per prompt (a batch of n prompts is n requests)."""
        with self._lock:
            self._calls += len(messages)

    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Add the usage the finished request reported."""
        usage = usage_of(response)
        with self._lock:
            self._usage = self._usage + usage


def message_usage(message: BaseMessage) -> Usage:
    """The token usage a model's reply (or a chunk of it) reports in ``usage_metadata``; zero when none."""
    metadata = message.usage_metadata if isinstance(message, AIMessage) else None
    if not metadata:
        return Usage()
    return Usage(
        input_tokens=metadata.get("input_tokens", 0),
        output_tokens=metadata.get("output_tokens", 0),
        total_tokens=metadata.get("total_tokens", 0),
    )


def cache_read_tokens(message: BaseMessage) -> int:
    """Input tokens of a reply that the provider read from its prompt cache (OpenAI's ``cached_tokens``, as
    LangChain reports it in ``input_token_details``); zero when none or not reported."""
    metadata = message.usage_metadata if isinstance(message, AIMessage) else None
    details = metadata.get("input_token_details") if metadata else None
    return int(details.get("cache_read", 0) or 0) if details else 0


def usage_of(result: LLMResult) -> Usage:
    """Token usage of a result: the messages' ``usage_metadata``, else the provider's ``token_usage``."""
    total = Usage()
    found = False
    for generations in result.generations:
        for generation in generations:
            message = generation.message if isinstance(generation, ChatGeneration) else None
            if isinstance(message, AIMessage) and message.usage_metadata:
                total = total + message_usage(message)
                found = True
    if found:
        return total
    # Older integrations report only ``llm_output["token_usage"]`` in OpenAI's field names.
    token_usage = (result.llm_output or {}).get("token_usage") or {}
    input_tokens = int(token_usage.get("prompt_tokens", 0) or 0)
    output_tokens = int(token_usage.get("completion_tokens", 0) or 0)
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=int(token_usage.get("total_tokens", 0) or 0) or input_tokens + output_tokens,
    )
