"""/api/mcp: the MCP server over streamable HTTP inside the app, scoped to the authenticated principal."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from starlette.types import ASGIApp

from orc.http import create_app
from orc.settings import ApiKeyPrincipal, Settings
from tests.http.conftest import upload
from tests.support import lifespan

KEYS = {
    "key-alice": ApiKeyPrincipal(organization="contoso", user="alice"),
    "key-mallory": ApiKeyPrincipal(organization="fabrikam", user="mallory"),
}
BASE = "http://127.0.0.1:8000"


@pytest.fixture
async def app() -> AsyncIterator[ASGIApp]:
    async with lifespan(create_app(Settings(auth="api-key", api_keys=KEYS))) as manager:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url=BASE) as client:
            response = await upload(
                client,
                "alice-conv",
                ("lease.txt", b"The monthly rent is 1,450 euros."),
                headers={"X-API-Key": "key-alice"},
            )
            assert response.status_code == 201
        yield manager.app


@asynccontextmanager
async def mcp_session(app: ASGIApp, key: str, path: str = "/api/mcp") -> AsyncIterator[ClientSession]:
    """A real MCP client session over streamable HTTP to the in-process app."""
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), headers={"X-API-Key": key})
    async with (
        http,
        streamable_http_client(f"{BASE}{path}", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@pytest.mark.parametrize("path", ["/api/mcp", "/api/mcp/"])
async def test_an_mcp_client_lists_and_calls_document_chat_over_http(app: ASGIApp, path: str) -> None:
    async with mcp_session(app, "key-alice", path) as session:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        result = await session.call_tool(
            "document_chat",
            {"question": "What is the rent?", "document_names": ["lease.txt"], "session_id": "alice-conv"},
        )

    assert "document_chat" in tools
    assert "documents.list" in tools  # /api/mcp keeps the design's dotted names unless told otherwise
    assert not result.isError
    assert result.structuredContent is not None
    assert "1,450" in result.structuredContent["answer"]
    assert result.structuredContent["files"][0]["blob_name"] == "lease.txt"


async def test_another_principal_cannot_reach_a_session_through_mcp(app: ASGIApp) -> None:
    async with mcp_session(app, "key-mallory") as session:
        result = await session.call_tool(
            "document_chat",
            {"question": "What is the rent?", "document_names": ["lease.txt"], "session_id": "alice-conv"},
        )

    assert result.isError
    text = " ".join(getattr(block, "text", "") for block in result.content)
    assert "not_found:" in text
    assert "1,450" not in text and "contoso" not in text


async def test_mcp_requests_without_credentials_are_unauthenticated(app: ASGIApp) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
        response = await client.post("/api/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"


async def test_a_foreign_host_header_is_refused(app: ASGIApp) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://evil.example") as client:
        response = await client.post(
            "/api/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"X-API-Key": "key-alice", "Accept": "application/json, text/event-stream"},
        )

    assert response.status_code == 421
