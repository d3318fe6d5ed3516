"""The tools the server publishes (names, schemas, descriptions, annotations) are pinned: any drift fails.

MCP clients and models read these schemas; a refactoring of how tools are registered must not change them.
Both name forms are pinned (``published_tools.json`` dotted, ``published_tools_underscore.json``). After an
intended change, regenerate the pins with ``python -m tests.mcp_server.test_published_tools`` and review the diff.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from orc.settings import Settings
from orc.tool_contract import (
    DOCUMENT_CHAT,
    DOCUMENT_TOOLS,
    NEVER_PLANNED,
    PORTABLE_TOOL_NAME,
    SCOPE_ARGUMENTS,
    SESSION_ATTACH_DOCUMENT,
    SESSION_REMOVE_DOCUMENT,
    TOOL_NAME_FORMS,
    TOOL_NAMES,
    ToolNameForm,
    model_tool_name,
    published_tool_name,
)
from tests.documents.library_support import open_runtime

PINNED = Path(__file__).with_name("published_tools.json")
PINS: dict[ToolNameForm, Path] = {
    "dotted": PINNED,
    "underscore": Path(__file__).with_name("published_tools_underscore.json"),
}


async def published_tools(form: ToolNameForm = "dotted") -> list[dict[str, Any]]:
    """Every tool of the fully built server as ``tools/list`` publishes it in ``form``, in registration order."""
    async with open_runtime(Settings(mcp_tool_names=form)) as runtime:
        tools = await runtime.published_mcp_server.list_tools()
    return [tool.model_dump(mode="json", by_alias=True) for tool in tools]


def render(tools: list[dict[str, Any]]) -> str:
    """The pin's text: key order kept, so a reordered schema is drift too."""
    return json.dumps(tools, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("form", TOOL_NAME_FORMS)
async def test_published_tools_match_the_pinned_schemas(form: ToolNameForm) -> None:
    assert render(await published_tools(form)) == PINS[form].read_text(encoding="utf-8")


@pytest.mark.parametrize("form", TOOL_NAME_FORMS)
def test_every_published_name_of_each_form_is_checked_against_the_strict_hosts_pattern(form: ToolNameForm) -> None:
    names = [tool["name"] for tool in json.loads(PINS[form].read_text(encoding="utf-8"))]
    portable = {name: PORTABLE_TOOL_NAME.fullmatch(name) is not None for name in names}
    # The dotted form is the design's and stays the default; the underscore form is the one strict hosts accept.
    assert all(portable.values()) is (form == "underscore"), portable
    assert len(set(names)) == len(names) == len(TOOL_NAMES)


def test_the_underscore_form_publishes_the_same_tools_with_the_same_schemas_and_no_dotted_name_in_texts() -> None:
    dotted = json.loads(PINS["dotted"].read_text(encoding="utf-8"))
    underscore = json.loads(PINS["underscore"].read_text(encoding="utf-8"))

    assert [published_tool_name(tool["name"], "underscore") for tool in dotted] == [t["name"] for t in underscore]
    for before, after in zip(dotted, underscore, strict=True):
        assert before["inputSchema"] == after["inputSchema"]
        assert before.get("outputSchema") == after.get("outputSchema")
        assert not any(name in after["description"] for name in TOOL_NAMES if "." in name), after["name"]


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
    for pinned_form, pin in PINS.items():
        pin.write_text(render(asyncio.run(published_tools(pinned_form))), encoding="utf-8")
