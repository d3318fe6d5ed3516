"""The tools the server publishes (names, schemas, descriptions, annotations) are pinned: any drift fails.

MCP clients and models read these schemas; a refactoring of how tools are registered must not change them.
After an intended change, regenerate the pin with ``python -m tests.mcp_server.test_published_tools`` and
review the diff.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.documents.library_support import open_runtime

PINNED = Path(__file__).with_name("published_tools.json")


async def published_tools() -> list[dict[str, Any]]:
    """Every tool of the fully built server as ``tools/list`` publishes it, in registration order."""
    async with open_runtime() as runtime:
        tools = await runtime.mcp_server.list_tools()
    return [tool.model_dump(mode="json", by_alias=True) for tool in tools]


def render(tools: list[dict[str, Any]]) -> str:
    """The pin's text: key order kept, so a reordered schema is drift too."""
    return json.dumps(tools, indent=2, ensure_ascii=False) + "\n"


async def test_published_tools_match_the_pinned_schemas() -> None:
    assert render(await published_tools()) == PINNED.read_text(encoding="utf-8")


if __name__ == "__main__":
    PINNED.write_text(render(asyncio.run(published_tools())), encoding="utf-8")
