"""Deterministic tool planning that follows orc's tool access rules.

- ``document_chat`` is never called by the planner: the executor forces it when the user attached files.
- Before any tool result exists in the turn: a question asking which documents are available calls the
  ``…list`` tool; any other question calls the ``…search`` tool with the question as its query.
- Once tool results are in the turn, no more tools are called, so the tool loop always ends.

Tool names may be dotted (``documents.search``) or OpenAI-safe (``documents__search``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall, ToolMessage

from orc.models.messages import tool_name
from orc.tool_contract import DOCUMENT_CHAT

__all__ = ["FORBIDDEN_TOOLS", "plan_tool_calls", "query_parameter", "wants_document_list"]

FORBIDDEN_TOOLS = frozenset({DOCUMENT_CHAT})

_LIST_INTENT = re.compile(
    # "show me the files", not "can less show two files side by side": only determiners between verb and noun.
    r"\b(list|show|enumerate)\s+(me\s+)?((the|my|our|your|all|available|uploaded|attached)\s+)*(documents?|files?|docs)\b"
    r"|\b(which|what)\s+(documents?|files?|docs)\b.*\b(available|have|there|see|access|uploaded|attached)\b"
    # "documents available", not "every object from another file available inside my filter".
    r"|\b(documents|files|docs)\b.*\b(available|do (i|we) have|can you see)\b",
    re.IGNORECASE | re.DOTALL,
)
_QUERY_NAMES = ("query", "q", "question", "text", "search", "search_query")


def wants_document_list(question: str) -> bool:
    """Whether ``question`` asks which documents exist rather than what they say."""
    return bool(_LIST_INTENT.search(question))


def _tool_ending(names: Sequence[str], ending: str) -> str | None:
    """The tool whose name ends with ``ending``; a ``documents…`` tool wins over e.g. a ``session…`` one."""
    matches = sorted((name for name in names if name.lower().endswith(ending)), key=lambda n: ("document" not in n, n))
    return matches[0] if matches else None


def query_parameter(tool: Mapping[str, Any]) -> str | None:
    """The string parameter a search tool takes its query in, read from its JSON schema."""
    function = tool.get("function", tool)
    schema = function.get("parameters", {}) if isinstance(function, Mapping) else {}
    properties: Mapping[str, Any] = schema.get("properties", {}) or {}
    strings = [name for name, spec in properties.items() if isinstance(spec, Mapping) and spec.get("type") == "string"]
    for preferred in _QUERY_NAMES:
        if preferred in strings:
            return preferred
    required = [name for name in schema.get("required", []) or [] if name in strings]
    return (required or strings or [None])[0]


def _turn_has_tool_results(messages: Sequence[BaseMessage]) -> bool:
    """Tool calls or results after the latest user message; earlier turns' tools do not end this turn's planning.

    A tool call counts too: a graph may hand results back as context instead of ToolMessages, and the
    planner must still stop after one round.
    """
    for message in reversed(messages):
        if isinstance(message, ToolMessage) or (isinstance(message, AIMessage) and message.tool_calls):
            return True
        if isinstance(message, HumanMessage):
            return False
    return False


def plan_tool_calls(
    question: str, messages: Sequence[BaseMessage], tools: Sequence[Mapping[str, Any]]
) -> list[ToolCall]:
    """The tool calls to make next (possibly none), with deterministic ids ``call_0``, ``call_1``…"""
    if _turn_has_tool_results(messages) or not question.strip():
        return []
    allowed = {tool_name(tool): tool for tool in tools if tool_name(tool) not in FORBIDDEN_TOOLS}
    list_tool = _tool_ending(list(allowed), "list")
    if list_tool is not None and wants_document_list(question):
        return [ToolCall(name=list_tool, args={}, id="call_0", type="tool_call")]
    search_tool = _tool_ending(list(allowed), "search")
    if search_tool is not None:
        parameter = query_parameter(allowed[search_tool])
        if parameter is not None:
            return [ToolCall(name=search_tool, args={parameter: question}, id="call_0", type="tool_call")]
    return []
