"""The tools the server publishes (names, schemas, descriptions, annotations) are pinned: any drift fails.

MCP clients and models read these schemas; a refactoring of how tools are registered must not change them.
After an intended change, regenerate the pin with ``python -m tests.mcp_server.test_published_tools`` and
review the diff.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

from orc.tool_contract import (
    DOCUMENT_CHAT,
    DOCUMENT_TOOLS,
    NEVER_PLANNED,
    SCOPE_ARGUMENTS,
    SESSION_ATTACH_DOCUMENT,
    SESSION_REMOVE_DOCUMENT,
    TOOL_NAMES,
    model_tool_name,
)
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


def pinned_tools() -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in json.loads(PINNED.read_text(encoding="utf-8"))}


def test_the_tool_contract_names_every_published_tool() -> None:
    assert set(pinned_tools()) == TOOL_NAMES


def test_every_scoped_tool_publishes_the_contracts_scope_arguments_as_optional() -> None:
    for name, tool in pinned_tools().items():
        if name.startswith("documents."):
            schema = tool["inputSchema"]
            assert set(SCOPE_ARGUMENTS) <= set(schema["properties"]), name
            assert set(SCOPE_ARGUMENTS).isdisjoint(schema.get("required", [])), name


def test_a_model_may_plan_every_published_document_tool_but_never_document_chat_or_a_session_change() -> None:
    plannable = {name for name in pinned_tools() if name not in NEVER_PLANNED}
    assert plannable == DOCUMENT_TOOLS
    assert {DOCUMENT_CHAT, SESSION_ATTACH_DOCUMENT, SESSION_REMOVE_DOCUMENT} <= NEVER_PLANNED


def test_model_facing_names_are_openai_safe_and_distinct() -> None:
    offered = {model_tool_name(name) for name in TOOL_NAMES}
    assert len(offered) == len(TOOL_NAMES)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) for name in offered)
    assert model_tool_name("documents.list") == "documents__list"


if __name__ == "__main__":
    PINNED.write_text(render(asyncio.run(published_tools())), encoding="utf-8")
