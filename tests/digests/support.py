"""Digest-model doubles: a function model that answers Task A/B like the offline model and tells them apart,
and a model whose answers wait at a gate (to look at the statuses while a digest is being made)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.outputs import ChatResult
from pydantic import PrivateAttr

from orc.models.digesting import digest_reply
from orc.models.messages import Reply, reply_result, usage_for
from orc.testing import FunctionChatModel

Answer = Callable[[list[BaseMessage]], str]


def envelope_of(messages: list[BaseMessage]) -> str:
    """The Task A/B envelope of a digest request."""
    return next(m.text for m in messages if isinstance(m, HumanMessage) and m.text.startswith("TASK: "))


def task_of(messages: list[BaseMessage]) -> tuple[str, str]:
    """``("A", filename)`` for Task A, ``("B", "")`` for Task B."""
    envelope = envelope_of(messages)
    if envelope.startswith("TASK: PER_FILE_DIGEST"):
        return "A", envelope.splitlines()[1].removeprefix("FILE: ")
    return "B", ""


def offline_answer(messages: list[BaseMessage]) -> str:
    """What the offline model answers."""
    reply = digest_reply(messages)
    assert reply is not None, "not a digest request"
    return reply


def digest_model(answer: Answer = offline_answer) -> FunctionChatModel:
    """A recording function model for digests (by default: the offline model's valid digests)."""
    return FunctionChatModel(lambda messages, tools: answer(messages), model_name="digests")


def task_a_files(model: FunctionChatModel) -> list[str]:
    """The filenames of the Task A requests received, in order."""
    return [name for task, name in (task_of(r.messages) for r in model.requests) if task == "A"]


def task_b_calls(model: FunctionChatModel) -> int:
    """How many Task B requests were received."""
    return sum(1 for r in model.requests if task_of(r.messages)[0] == "B")


def tasks(model: FunctionChatModel) -> list[str]:
    """``A:<filename>`` and ``B`` in the order the requests arrived."""
    return [f"A:{name}" if task == "A" else "B" for task, name in (task_of(r.messages) for r in model.requests)]


class GatedDigestModel(BaseChatModel):
    """Answers like the offline model, but each request waits until the gate opens (``reached`` is set first)."""

    _open: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)
    _reached: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)
    _arrivals: asyncio.Condition = PrivateAttr(default_factory=asyncio.Condition)
    _waiting: int = PrivateAttr(default=0)
    _most_waiting: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "gated-digests"

    @property
    def reached(self) -> asyncio.Event:
        """Set when a request arrives at the closed gate."""
        return self._reached

    def open(self) -> None:
        """Let every waiting and later request through."""
        self._open.set()

    @property
    def most_waiting(self) -> int:
        """The most requests that were at the gate at once: how many digests were being made together."""
        return self._most_waiting

    async def until_waiting(self, count: int) -> None:
        """Return once ``count`` requests wait at the gate together."""
        async with self._arrivals:
            await self._arrivals.wait_for(lambda: self._waiting >= count)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        raise AssertionError("digests are made on the async path")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._reached.set()
        async with self._arrivals:
            self._waiting += 1
            self._most_waiting = max(self._most_waiting, self._waiting)
            self._arrivals.notify_all()
        try:
            await self._open.wait()
        finally:
            self._waiting -= 1
        reply = Reply(text=offline_answer(messages))
        return reply_result(reply, usage_for(messages, reply), {"model_name": "gated"})
