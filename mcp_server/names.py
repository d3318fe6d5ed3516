"""Tool names in what the tools say, spelled as the server publishes them.

A tool's hints and errors name other tools ("use documents.search instead", "call documents.list for the available
ones"). Over stdio the tools are published as ``documents_search``: a client told to call ``documents.search``
calls a tool that does not exist there. The server that publishes underscore names rewrites them in every error,
and in the ``message`` and ``hint`` fields of a result (never in a document's own text, which is quoted as it is).
"""

from __future__ import annotations

import json
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server

from orc.tool_contract import ToolNameForm, published_text

ADVICE_FIELDS = frozenset({"message", "hint"})
"""The result fields written by orc to guide the caller: the only ones whose tool names are respelled."""


def publish_names_in_results(server: Server[Any, Any], form: ToolNameForm) -> None:
    """Make ``server`` spell orc's tool names in ``form`` in its tool results' advice and errors."""
    if form == "dotted":
        return
    handler = server.request_handlers[types.CallToolRequest]

    async def respelled(request: types.CallToolRequest) -> types.ServerResult:
        result = await handler(request)
        if isinstance(result.root, types.CallToolResult):
            return types.ServerResult(_respelled(result.root, form))
        return result

    server.request_handlers[types.CallToolRequest] = respelled


def _respelled(result: types.CallToolResult, form: ToolNameForm) -> types.CallToolResult:
    if result.isError:
        content = [
            item.model_copy(update={"text": published_text(item.text, form)})
            if isinstance(item, types.TextContent)
            else item
            for item in result.content
        ]
        return result.model_copy(update={"content": content})
    changed: dict[str, str] = {}
    structured = _advice_respelled(result.structuredContent, form, changed)
    if not changed:
        return result
    content = []
    for item in result.content:
        if isinstance(item, types.TextContent):
            # The text is the structured result serialized: the same strings, JSON-escaped.
            text = item.text
            for old, new in changed.items():
                text = text.replace(_in_json(old), _in_json(new))
            item = item.model_copy(update={"text": text})
        content.append(item)
    return result.model_copy(update={"content": content, "structuredContent": structured})


def _advice_respelled(value: Any, form: ToolNameForm, changed: dict[str, str], key: str = "") -> Any:
    if isinstance(value, dict):
        return {name: _advice_respelled(item, form, changed, name) for name, item in value.items()}
    if isinstance(value, list):
        return [_advice_respelled(item, form, changed, key) for item in value]
    if isinstance(value, str) and key in ADVICE_FIELDS:
        spelled = published_text(value, form)
        if spelled != value:
            changed[value] = spelled
        return spelled
    return value


def _in_json(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]
