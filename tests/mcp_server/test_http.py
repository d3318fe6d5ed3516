"""The MCP server over streamable HTTP, mounted at /api/mcp in a Starlette app, through a real MCP client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_server.http import build_mcp_http_app, mcp_routes
from mcp_server.scope import current_principal
from orc.contracts import DocumentChatResult
from orc.principal import Principal
from tests.mcp_server.helpers import ALICE, CONVERSATION, HANDBOOK, Served, build_served, upload

BASE_URL = "http://127.0.0.1:8000"


class FakeAuthentication:
    """Stands in for the HTTP app's authenticator: puts a fixed principal (or none) into the ASGI state."""

    def __init__(self, app: ASGIApp, principal: Principal | None) -> None:
        self.app = app
        self.principal = principal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.principal is not None:
            scope.setdefault("state", {})["principal"] = self.principal
        await self.app(scope, receive, send)


@asynccontextmanager
async def http_client(served: Served, principal: Principal | None = ALICE) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client talking to a Starlette app that mounts the MCP endpoint at /api/mcp, lifespan running."""
    endpoint, mcp_lifespan = build_mcp_http_app(served.server, allowed_hosts=["127.0.0.1:*", "localhost:*"])

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp_lifespan():
            yield

    app = Starlette(routes=mcp_routes("/api/mcp", endpoint), lifespan=lifespan)
    authenticated = FakeAuthentication(app, principal)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=authenticated), base_url=BASE_URL) as client,
    ):
        yield client


@asynccontextmanager
async def mcp_session(client: httpx.AsyncClient, path: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session over ``client``."""
    async with (
        streamable_http_client(f"{BASE_URL}{path}", http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def _text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def _arguments() -> dict[str, Any]:
    return {"question": "How many vacation days?", "document_names": ["handbook.txt"], "session_id": CONVERSATION}


@pytest.mark.parametrize("path", ["/api/mcp", "/api/mcp/"])
async def test_tools_are_listed_and_called_at_the_mount_path_with_or_without_a_slash(path: str) -> None:
    served = build_served()
    await upload(served.blobs, "handbook.txt", HANDBOOK)

    async with http_client(served) as client, mcp_session(client, path) as session:
        tools = await session.list_tools()
        result = await session.call_tool("document_chat", _arguments())

    assert [tool.name for tool in tools.tools] == ["document_chat"]
    assert result.isError is False
    assert DocumentChatResult.model_validate(result.structuredContent).files[0].blob_name == "handbook.txt"


async def test_the_endpoint_answers_with_json_not_a_redirect_or_a_stream() -> None:
    served = build_served()
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": types.LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}

    async with http_client(served) as client:
        response = await client.post("/api/mcp", json=request, headers=headers)

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["serverInfo"]["name"] == "orc"
    # Stateless: no session to track between requests.
    assert "mcp-session-id" not in response.headers


async def test_a_foreign_host_header_is_refused_with_421() -> None:
    served = build_served()

    async with http_client(served) as client:
        response = await client.post(
            "/api/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
            headers={"Host": "attacker.example", "Accept": "application/json, text/event-stream"},
        )

    assert response.status_code == 421


async def test_a_request_without_an_authenticated_principal_gets_unauthenticated_results() -> None:
    served = build_served()
    await upload(served.blobs, "handbook.txt", HANDBOOK)

    # Even with a process-wide principal set (as for in-memory sessions), HTTP requests never fall back to it.
    token = current_principal.set(ALICE)
    try:
        async with http_client(served, principal=None) as client, mcp_session(client, "/api/mcp") as session:
            result = await session.call_tool("document_chat", _arguments())
    finally:
        current_principal.reset(token)

    assert result.isError is True
    assert "unauthenticated: " in _text(result)
    assert not served.blobs.heads


async def test_the_principal_comes_from_the_request_not_the_process() -> None:
    served = build_served()
    await upload(served.blobs, "handbook.txt", HANDBOOK, principal=ALICE)
    bob = Principal(organization="acme", user="bob")

    async with http_client(served, principal=bob) as client, mcp_session(client, "/api/mcp") as session:
        result = await session.call_tool("document_chat", _arguments())

    assert result.isError is True
    assert "not_found: " in _text(result)


async def test_a_server_can_be_configured_for_http_only_once() -> None:
    served = build_served()
    build_mcp_http_app(served.server, allowed_hosts=["127.0.0.1:*"])

    with pytest.raises(RuntimeError, match="already configured"):
        build_mcp_http_app(served.server, allowed_hosts=["127.0.0.1:*"])
