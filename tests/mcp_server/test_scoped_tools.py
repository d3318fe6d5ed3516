"""Registering a tool that acts for the caller: the principal (and the document scope) are filled in, published
arguments are the body's own (plus the scope arguments), and errors follow the tools' one error policy."""

from __future__ import annotations

from typing import Annotated

import pytest
from mcp import types
from mcp.server.fastmcp import FastMCP
from pydantic import BaseModel, Field

from mcp_server.tools import split_tool_error
from mcp_server.tools.scoped import principal_tool, scoped_tool
from orc.documents.catalog.availability import DocumentScope
from orc.errors import NotFound
from orc.principal import Principal
from orc.tool_contract import SCOPE_ARGUMENTS
from tests.documents.library_support import open_runtime
from tests.mcp_server.helpers import ALICE, connect

READ_ONLY = types.ToolAnnotations(readOnlyHint=True)


class Echo(BaseModel):
    """What the body saw."""

    user: str
    word: str
    session_id: str | None = None


def render_echo(result: Echo) -> str:
    return f"{result.user} said {result.word}"


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def echo_server(calls: list[str], *, raises: Exception | None = None) -> FastMCP:
    async def echo(principal: Principal, word: Annotated[str, Field(description="A word.")]) -> Echo:
        calls.append(word)
        if raises is not None:
            raise raises
        return Echo(user=principal.user, word=word)

    server = FastMCP("test")
    principal_tool(
        server,
        name="echo",
        title="Echo",
        description="Echo a word.",
        annotations=READ_ONLY,
        failure="echoing failed",
        render=render_echo,
    )(echo)
    return server


async def test_a_principal_tool_publishes_only_its_own_arguments_and_acts_for_the_caller() -> None:
    calls: list[str] = []
    async with connect(echo_server(calls), ALICE) as session:
        (tool,) = (await session.list_tools()).tools
        result = await session.call_tool("echo", {"word": "hello"})

    assert list(tool.inputSchema["properties"]) == ["word"]
    assert tool.inputSchema["required"] == ["word"]
    assert tool.outputSchema is not None and tool.outputSchema["title"] == "Echo"
    assert result.structuredContent == {"user": "alice", "word": "hello", "session_id": None}
    assert text_of(result) == "alice said hello"


async def test_a_call_without_a_principal_is_unauthenticated_before_the_body_runs() -> None:
    calls: list[str] = []
    async with connect(echo_server(calls), principal=None) as session:
        result = await session.call_tool("echo", {"word": "hello"})

    assert result.isError
    assert split_tool_error(text_of(result))[0] == "unauthenticated"
    assert calls == []


@pytest.mark.parametrize(
    ("raised", "code", "message"),
    [
        (NotFound("no such thing"), "not_found", "no such thing"),
        (RuntimeError("https://secret.example/key=1"), "internal_error", "echoing failed; try again later"),
    ],
)
async def test_errors_raised_by_a_body_follow_the_tool_error_policy(raised: Exception, code: str, message: str) -> None:
    async with connect(echo_server([], raises=raised), ALICE) as session:
        result = await session.call_tool("echo", {"word": "hello"})

    assert result.isError
    assert split_tool_error(text_of(result)) == (code, message)


async def test_a_scoped_tool_publishes_the_scope_arguments_where_its_scope_parameter_stands() -> None:
    seen: list[DocumentScope] = []

    async def look(
        principal: Principal,
        first: Annotated[str, Field(description="Before the scope.")],
        scope: DocumentScope,
        *,
        last: Annotated[int, Field(description="After the scope.")] = 1,
    ) -> Echo:
        seen.append(scope)
        return Echo(user=principal.user, word=first, session_id=scope.session_id)

    async with open_runtime() as runtime:
        server = FastMCP("test")
        scoped_tool(
            server,
            runtime.foundation.scopes,
            name="look",
            title="Look",
            description="Look around.",
            annotations=READ_ONLY,
            failure="looking failed",
            render=render_echo,
        )(look)
        async with connect(server, ALICE) as session:
            (tool,) = (await session.list_tools()).tools
            ok = await session.call_tool("look", {"first": "x", "session_id": "conv-1"})
            elsewhere = await session.call_tool("look", {"first": "x", "context_type": "folder", "context_id": "nope"})

    assert list(tool.inputSchema["properties"]) == ["first", *SCOPE_ARGUMENTS, "last"]
    assert tool.inputSchema["required"] == ["first"]
    assert ok.structuredContent == {"user": "alice", "word": "x", "session_id": "conv-1"}
    assert split_tool_error(text_of(elsewhere))[0] == "context_not_found"
    assert [scope.session_id for scope in seen] == ["conv-1"]


def test_a_body_that_does_not_take_the_filled_in_parameters_is_refused_at_registration() -> None:
    async def no_principal(word: str) -> Echo:
        return Echo(user="?", word=word)

    with pytest.raises(TypeError, match="must take principal"):
        principal_tool(
            FastMCP("test"),
            name="bad",
            title="Bad",
            description="Bad.",
            annotations=READ_ONLY,
            failure="bad",
            render=render_echo,
        )(no_principal)
