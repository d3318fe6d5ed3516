"""Chat-model doubles for tests and benchmarks: a scripted model and a function-driven model.

Both are real LangChain chat models (``ainvoke``, ``astream``, ``bind_tools``), record every request with
the tools it offered, report approximate ``usage_metadata``, and can simulate a model round trip with
``latency`` seconds (awaited with ``asyncio.sleep`` on the async paths).
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, TypeAlias

from langchain_core.messages import AIMessage, BaseMessage, ToolCall
from pydantic import Field, PrivateAttr

from orc.errors import ScriptExhausted
from orc.models.choice import ModelCapabilities
from orc.models.messages import Reply, ToolSchemaChatModel, offered_tools, tool_name

__all__ = [
    "FunctionChatModel",
    "ModelRequest",
    "ResponseFunction",
    "ScriptStep",
    "ScriptedChatModel",
]

ScriptStep: TypeAlias = str | Sequence[Mapping[str, Any]] | AIMessage | BaseException
"""One scripted response: text, a list of tool calls (``{"name", "args", "id"?}``), a ready AIMessage, or an
exception to raise (to test how callers handle a failing model)."""

ResponseFunction: TypeAlias = Callable[[list[BaseMessage], list[dict[str, Any]]], AIMessage | str]
"""``(messages, tools offered in OpenAI format) -> reply`` for :class:`FunctionChatModel`."""


class ModelRequest(NamedTuple):
    """One request a double received: the messages, the names of the tools it offered, and whether the reply was
    asked for as a stream."""

    messages: list[BaseMessage]
    tool_names: list[str]
    streamed: bool = False


class _RecordingChatModel(ToolSchemaChatModel):
    """What the doubles share: every request recorded, and the latency they simulate."""

    model_name: str = "scripted"
    orc_capabilities: ClassVar[ModelCapabilities] = ModelCapabilities(counted_with_tiktoken=False)
    """A real model in every way a turn treats one, but with no tokenizer: budgets are estimated, as tests size them."""
    latency: float = Field(default=0.0, ge=0.0)
    """Seconds each request takes, to simulate model round trips in benchmarks."""

    # Re-entrant, so numbering tool-call ids can take it whether or not the caller already holds it.
    _lock: threading.RLock = PrivateAttr(default_factory=threading.RLock)
    _requests: list[ModelRequest] = PrivateAttr(default_factory=list)
    _call_ids: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "orc-testing"

    @property
    def requests(self) -> list[ModelRequest]:
        """Every request received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def calls(self) -> int:
        """How many requests were received."""
        with self._lock:
            return len(self._requests)

    def _next_step(self, tools: list[dict[str, Any]]) -> Any:
        """Called under the lock right after recording the request: claim what this request will use."""
        return None

    @abstractmethod
    def _reply_for(self, step: Any, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> Reply:
        """The reply to one request, given the step claimed for it."""

    def _reply(self, messages: list[BaseMessage], kwargs: Mapping[str, Any], *, streamed: bool) -> Reply:
        """Record the request and claim its step together, so concurrent requests keep the script's order."""
        tools = offered_tools(kwargs)
        with self._lock:
            self._requests.append(ModelRequest(list(messages), [tool_name(tool) for tool in tools], streamed))
            step = self._next_step(tools)
        # Outside the lock: a response function may be slow or call other models.
        return self._reply_for(step, list(messages), tools)

    def _tool_calls(self, calls: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
        """Tool calls with ids; a missing id gets a deterministic ``call_<n>``, numbered across the model's life."""
        result = []
        with self._lock:
            for call in calls:
                call_id = call.get("id")
                if not call_id:
                    call_id = f"call_{self._call_ids}"
                    self._call_ids += 1
                result.append(ToolCall(name=str(call["name"]), args=dict(call.get("args") or {}), id=str(call_id)))
        return result

    def _from_message(self, message: AIMessage | str) -> Reply:
        if isinstance(message, str):
            return Reply(text=message)
        return Reply(text=message.text, tool_calls=self._tool_calls(message.tool_calls))

    def _delay(self) -> float:
        return self.latency


class ScriptedChatModel(_RecordingChatModel):
    """Replays ``script`` one step per request; text steps stream word by word.

    >>> search = [{"name": "documents__search", "args": {"query": "rent"}}]
    >>> model = ScriptedChatModel(script=[search, "Rent is $1,850 [lease.pdf::S3]."])
    """

    script: list[Any] = Field(default_factory=list)
    """The :data:`ScriptStep` responses, in order."""

    _position: int = PrivateAttr(default=0)

    def __init__(self, script: Sequence[Any] = (), /, **data: Any) -> None:
        """``ScriptedChatModel(["first reply", [tool call, ...], ...], latency=0.05)``."""
        if script:
            data["script"] = list(script)
        super().__init__(**data)

    @property
    def remaining(self) -> int:
        """How many scripted steps have not been used yet."""
        with self._lock:
            return len(self.script) - self._position

    def _next_step(self, tools: list[dict[str, Any]]) -> Any:
        if self._position >= len(self.script):
            raise ScriptExhausted(
                f"ScriptedChatModel received request {self._position + 1} but its script has only "
                f"{len(self.script)} step(s); that request offered tools {[tool_name(t) for t in tools]}"
            )
        step = self.script[self._position]
        self._position += 1
        return step

    def _reply_for(self, step: Any, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> Reply:
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, str | AIMessage):
            return self._from_message(step)
        return Reply(tool_calls=self._tool_calls(step))


class FunctionChatModel(_RecordingChatModel):
    """Answers each request with ``function(messages, tools)``, for tests that need logic."""

    model_name: str = "function"
    function: Callable[[list[BaseMessage], list[dict[str, Any]]], AIMessage | str]

    def __init__(self, function: ResponseFunction | None = None, /, **data: Any) -> None:
        """``FunctionChatModel(lambda messages, tools: "reply")``."""
        if function is not None:
            data["function"] = function
        super().__init__(**data)

    def _reply_for(self, step: Any, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> Reply:
        return self._from_message(self.function(messages, tools))
