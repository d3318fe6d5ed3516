"""Two organizations with api-key auth: no route and no tool lets one see, read, search or remove the other's
documents, contexts or sessions, even with guessed ids — and the answer is 404 / not_found, never 403."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from starlette.types import ASGIApp

from mcp_server.tools import split_tool_error
from orc.http import create_app
from orc.settings import ApiKeyPrincipal, Settings
from tests.support import lifespan

KEYS = {
    "key-alice": ApiKeyPrincipal(organization="contoso", user="alice"),
    "key-mallory": ApiKeyPrincipal(organization="fabrikam", user="mallory"),
}
ALICE = {"X-API-Key": "key-alice"}
MALLORY = {"X-API-Key": "key-mallory"}
BASE = "http://127.0.0.1:8000"
SECRET = b"The merger code name is BLUEBIRD and the price is 42 million."


@pytest.fixture
async def app() -> AsyncIterator[ASGIApp]:
    async with lifespan(create_app(Settings(auth="api-key", api_keys=KEYS))) as manager:
        yield manager.app


@asynccontextmanager
async def http(app: ASGIApp, headers: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE, headers=headers) as client:
        yield client


@asynccontextmanager
async def mcp(app: ASGIApp, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), headers=headers)
    async with (
        client,
        streamable_http_client(f"{BASE}/api/mcp", http_client=client) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def alice_setup(app: ASGIApp) -> dict[str, str]:
    """Alice's tree (folder legal, usecase deal), documents in each, and a session document; returns their ids."""
    async with http(app, ALICE) as client:
        assert (await client.put("/api/contexts/folder/legal", json={"name": "Legal"})).status_code == 201
        deal = await client.put("/api/contexts/usecase/deal", json={"name": "Deal", "parent_id": "legal"})
        assert deal.status_code == 201
        ids = {}
        for path in ("organization/contoso", "folder/legal", "usecase/deal"):
            response = await client.post(
                f"/api/contexts/{path}/documents", files=[("files", ("secret.txt", SECRET, "text/plain"))]
            )
            assert response.status_code == 202, response.text
            ids[path] = response.json()["documents"][0]["document_id"]
        session = await client.post(
            "/api/sessions/alice-conv/context/files", files=[("files", ("memo.txt", SECRET, "text/plain"))]
        )
        ids["session"] = session.json()["files"][0]["file_id"]
    return ids


def problem_code(response: httpx.Response) -> str:
    return str(response.json().get("code"))


async def test_no_route_reaches_another_organizations_contexts_or_documents(app: ASGIApp) -> None:
    ids = await alice_setup(app)
    async with http(app, MALLORY) as client:
        # Mallory's own tree may reuse Alice's ids: it is a different tree.
        assert (await client.put("/api/contexts/folder/legal", json={"name": "Mine"})).status_code == 201
        attempts = [
            await client.get("/api/contexts/organization/contoso"),
            await client.put("/api/contexts/organization/contoso", json={"name": "Taken over"}),
            await client.get("/api/contexts/organization/contoso/documents"),
            await client.post(
                "/api/contexts/organization/contoso/documents", files=[("files", ("x.txt", b"x", "text/plain"))]
            ),
            await client.delete(f"/api/contexts/organization/contoso/documents/{ids['organization/contoso']}"),
            await client.get("/api/contexts/usecase/deal"),
            await client.get("/api/contexts/usecase/deal/documents"),
            await client.delete(f"/api/contexts/usecase/deal/documents/{ids['usecase/deal']}"),
            await client.delete(f"/api/contexts/folder/legal/documents/{ids['folder/legal']}"),
            await client.delete(f"/api/contexts/organization/fabrikam/documents/{ids['organization/contoso']}"),
            await client.put("/api/contexts/usecase/mine", json={"name": "Under Alice's usecase", "parent_id": "deal"}),
            await client.get("/api/sessions/alice-conv/context"),
            await client.delete(f"/api/sessions/alice-conv/context/files/{ids['session']}"),
            await client.post(
                "/api/orc", json={"question": "Code name?", "context": {"type": "usecase", "id": "deal"}}
            ),
            await client.post(
                "/api/orc", json={"question": "Code name?", "context": {"type": "organization", "id": "contoso"}}
            ),
        ]
        # Alice's existing usecase and one that never existed look exactly alike.
        existing = await client.get("/api/contexts/usecase/deal")
        missing = await client.get("/api/contexts/usecase/never-created")
        own_legal = (await client.get("/api/contexts/folder/legal/documents")).json()
        answer = await client.post(
            "/api/orc",
            json={"question": "What is the merger code name?", "context": {"type": "organization", "id": "fabrikam"}},
        )

    assert [response.status_code for response in attempts] == [404] * len(attempts)
    assert all("BLUEBIRD" not in response.text for response in attempts)
    assert existing.json() == {**missing.json(), "detail": missing.json()["detail"].replace("never-created", "deal")}
    assert own_legal["documents"] == []
    assert answer.status_code == 200 and "BLUEBIRD" not in answer.text

    async with http(app, ALICE) as client:
        still_there = (await client.get("/api/contexts/usecase/deal/documents")).json()["documents"]
    assert [d["document_id"] for d in still_there] == [ids["usecase/deal"]]


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return await session.call_tool(name, arguments)


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_no_tool_reaches_another_organizations_documents_or_sessions(app: ASGIApp) -> None:
    ids = await alice_setup(app)
    own = {"context_type": "organization", "context_id": "fabrikam", "session_id": "alice-conv"}
    async with mcp(app, MALLORY) as session:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        denied = {
            "list contoso": await call(
                session, "documents.list", {"context_type": "organization", "context_id": "contoso"}
            ),
            "list deal": await call(session, "documents.list", {"context_type": "usecase", "context_id": "deal"}),
            "search legal": await call(
                session, "documents.search", {"query": "code name", "context_type": "folder", "context_id": "legal"}
            ),
            "search by id": await call(
                session, "documents.search", {"query": "code name", "document_ids": [ids["usecase/deal"]], **own}
            ),
            "content": await call(session, "documents.get_content", {"document_id": ids["folder/legal"], **own}),
            "summary": await call(session, "documents.get_summary", {"document_id": ids["usecase/deal"], **own}),
            "analyze": await call(session, "documents.analyze", {"document_id": ids["session"], **own}),
            "session list": await call(session, "session.list_documents", {"session_id": "alice-conv"}),
            "session remove": await call(
                session, "session.remove_document", {"session_id": "alice-conv", "document_id": ids["session"]}
            ),
            "document_chat": await call(
                session,
                "document_chat",
                {"question": "Code name?", "document_names": ["memo.txt"], "session_id": "alice-conv"},
            ),
        }
        listed = await call(session, "documents.list", own)
        searched = await call(session, "documents.search", {"query": "merger code name BLUEBIRD", **own})

    assert tools >= {"documents.list", "documents.search", "session.list_documents"}
    for name, result in denied.items():
        assert result.isError, name
        code = split_tool_error(text_of(result))[0]
        assert code.endswith("not_found"), (name, code)
        assert "BLUEBIRD" not in text_of(result) and "forbidden" not in text_of(result).lower(), name
    assert listed.structuredContent is not None and listed.structuredContent["documents"] == []
    assert searched.structuredContent is not None and searched.structuredContent["results"] == []
