"""The output policy on tool results sent over stdio, where the result is serialized (``/api/mcp`` responses pass
the HTTP app's door, :mod:`orc.http.output_door`).

It applies at the transports, not in the tools: the orchestrator's in-memory session reads the same tools and needs
the documents' text as it is (the answer it makes from them is cleaned in the turn).
"""

from __future__ import annotations

from typing import Any

from mcp import types
from mcp.server.lowlevel import Server

from orc.output_policy import OutputPolicy


def clean_tool_results(server: Server[Any, Any], policy: OutputPolicy) -> None:
    """Make ``server`` answer every tool call with its result cleaned by ``policy`` (for stdio, where no HTTP
    response passes a cleaner)."""
    handler = server.request_handlers[types.CallToolRequest]

    async def cleaning(request: types.CallToolRequest) -> types.ServerResult:
        result = await handler(request)
        if isinstance(result.root, types.CallToolResult):
            data = policy.value(result.root.model_dump(mode="json", by_alias=True))
            return types.ServerResult(types.CallToolResult.model_validate(data))
        return result

    server.request_handlers[types.CallToolRequest] = cleaning
