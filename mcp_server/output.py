"""The output policy on tool results that leave through a published transport (``/api/mcp``, stdio).

It applies at the transports, not in the tools: the orchestrator's in-memory session reads the same tools and needs
the documents' text as it is (the answer it makes from them is cleaned in the turn).
"""

from __future__ import annotations

import json
from typing import Any

from mcp import types
from mcp.server.lowlevel import Server

from orc.output_policy import OutputPolicy


def cleaned_value(value: Any, policy: OutputPolicy) -> Any:
    """``value`` with every string cleaned; a string that holds JSON (a tool's structured result as text) is
    cleaned string by string, so the escapes the policy adds stay valid JSON."""
    if isinstance(value, str):
        if value[:1] in ("{", "["):
            try:
                parsed = json.loads(value)
            except ValueError:
                return policy.text(value)
            return json.dumps(cleaned_value(parsed, policy), ensure_ascii=False)
        return policy.text(value)
    if isinstance(value, dict):
        return {key: cleaned_value(item, policy) for key, item in value.items()}
    if isinstance(value, list):
        return [cleaned_value(item, policy) for item in value]
    return value


def clean_tool_results(server: Server[Any, Any], policy: OutputPolicy) -> None:
    """Make ``server`` answer every tool call with its result cleaned by ``policy`` (for stdio, where no HTTP
    response passes a cleaner)."""
    handler = server.request_handlers[types.CallToolRequest]

    async def cleaning(request: types.CallToolRequest) -> types.ServerResult:
        result = await handler(request)
        if isinstance(result.root, types.CallToolResult):
            data = cleaned_value(result.root.model_dump(mode="json", by_alias=True), policy)
            return types.ServerResult(types.CallToolResult.model_validate(data))
        return result

    server.request_handlers[types.CallToolRequest] = cleaning
