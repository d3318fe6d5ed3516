"""The one scripted model both builds of the side-by-side benchmark talk to, and how its input is counted.

:func:`grounded_reply` is the model's behaviour. It answers with the sentence of the first source it is shown
that shares the most words with the question, cited by its SourceRef. The sources are ``<source ref="…">``
elements (orc's own format, which the peer's MCP tool returns too), read from the latest tool result when there
is one, else from the system prompt (where orc puts them). When it is offered tools and has not seen a tool
result for the latest question, it calls one: the peer's ``document_chat`` with the question and the attached
file names, or, for orc's planning prompt, the first tool offered. History messages before the latest question
(orc sends them budgeted; the peer sends its whole checkpointed thread) are read by neither reply. So each build
gets the reply its prompts ask for, and the model takes the same ``latency`` per call for both.

Input is counted as about four characters per token (:func:`orc.models.messages.approx_tokens`) for both builds:
tiktoken cannot download its encodings here. A request counts every message's text, the tool calls it carries
and the JSON schemas of the tools it is offered.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from orc.testing import FunctionChatModel
from orc.text import split_sentences, tokenize

PEER_TOOL = "document_chat"
ATTACHED = "\n\nAttached files: "
"""How the peer's app tells the model which files are attached (the model passes them to ``document_chat``)."""

_SOURCE = re.compile(r'<source ref="([^"]+)"[^>]*>\n(.*?)\n</source>', re.DOTALL)


def user_message(question: str, blob_names: Sequence[str]) -> str:
    """The peer's human message: the question, and the attached file names when there are any."""
    return question + (ATTACHED + ", ".join(blob_names) if blob_names else "")


def parse_user_message(text: str) -> tuple[str, list[str]]:
    """The question and the attached file names of a :func:`user_message`."""
    question, _, names = text.partition(ATTACHED)
    return question, [name.strip() for name in names.split(",") if name.strip()]


def _since_last_question(messages: list[BaseMessage]) -> list[BaseMessage]:
    for position in range(len(messages) - 1, -1, -1):
        if isinstance(messages[position], HumanMessage):
            return messages[position:]
    return messages


def _tool_call(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
    names = [tool["function"]["name"] for tool in tools]
    if PEER_TOOL in names:
        question, blob_names = parse_user_message(_since_last_question(messages)[0].text)
        args: dict[str, Any] = {"question": question, "blob_names": blob_names}
        return AIMessage("", tool_calls=[{"name": PEER_TOOL, "args": args, "id": ""}])
    # orc's planning prompt (a turn without attached files): call the first tool, as bench.common's model does.
    return AIMessage("", tool_calls=[{"name": names[0], "args": {"text": "hi"}, "id": ""}])


def grounded_reply(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
    """The scripted model's reply to one request (see the module docstring)."""
    latest = _since_last_question(messages)
    results = [message.text for message in latest if isinstance(message, ToolMessage)]
    if tools and not results:
        return _tool_call(messages, tools)
    system = next((message.text for message in messages if isinstance(message, SystemMessage)), "")
    sources = _SOURCE.findall("\n".join(results) or system)
    if not sources:
        return "No sources."
    ref, text = sources[0]
    question = set(tokenize(parse_user_message(latest[0].text)[0] if latest else ""))
    sentences = split_sentences(html.unescape(text)) or [text]
    # The sentence sharing the most words with the question (the first on ties): a grounded, quotable answer.
    best = max(sentences, key=lambda sentence: len(question.intersection(tokenize(sentence))))
    return f"{' '.join(best.split())} [{ref}]"


def request_tokens(messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> int:
    """The estimated input tokens of one model request: message texts, their tool calls and the offered tools."""
    chars = 0
    for message in messages:
        chars += len(message.text)
        if isinstance(message, AIMessage) and message.tool_calls:
            chars += len(json.dumps([{"name": c["name"], "args": c["args"]} for c in message.tool_calls]))
    if tools:
        chars += len(json.dumps(list(tools)))
    return (chars + 3) // 4  # the estimate of orc.models.messages.approx_tokens, over the whole request


@dataclass
class InputMeter:
    """Input tokens of every request a :func:`metered_model` received, in order."""

    tokens: list[int] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]]) -> None:
        """Count one request."""
        with self._lock:
            self.tokens.append(request_tokens(messages, tools))

    def since(self, start: int) -> tuple[int, int]:
        """(requests, input tokens) of the requests after the first ``start``."""
        with self._lock:
            recent = self.tokens[start:]
        return len(recent), sum(recent)

    @property
    def count(self) -> int:
        """How many requests were counted."""
        with self._lock:
            return len(self.tokens)


def bench_model(latency: float = 0.0) -> FunctionChatModel:
    """The benchmark's model: :func:`grounded_reply`, ``latency`` seconds per call (``asyncio.sleep``)."""
    return FunctionChatModel(grounded_reply, latency=latency)


def metered_model(meter: InputMeter, latency: float = 0.0) -> FunctionChatModel:
    """:func:`bench_model`, also counting each request's input tokens in ``meter``."""

    def respond(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage | str:
        meter.record(messages, tools)
        return grounded_reply(messages, tools)

    return FunctionChatModel(respond, latency=latency)
