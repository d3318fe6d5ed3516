"""One door for output: a session seeded with the hostile corpus in every place text can come from (document text,
file names, titles, a feedback comment, context names, supplied text, the suggestions of paused turns, digest
facts), then every route of the OpenAPI document and every MCP tool called: nothing any of them answers is raw."""

from __future__ import annotations

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from orc.http import create_app
from orc.settings import Settings
from tests.adversarial.walk import ROUTES, TOOLS, seed, unwalked_routes, unwalked_tools, walk_routes, walk_tools
from tests.support import lifespan


async def test_every_route_and_every_mcp_tool_answer_a_session_full_of_hostile_text_with_nothing_raw() -> None:
    app = create_app(Settings(output_image_hosts=["img.example"]))
    async with lifespan(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000", timeout=120) as client:
            document = (await client.get("/api/openapi.json")).json()
            walk = await seed(client)
            await walk_routes(client, walk)
            async with (
                streamable_http_client("http://127.0.0.1:8000/api/mcp", http_client=client) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = await walk_tools(session, walk)

    # A route or tool added later is walked too, or this fails.
    assert unwalked_routes(document) == set()
    assert unwalked_tools(listed) == set()
    walked = {where for where in walk.responses}
    assert {f"{method} {path}" for method, path in ROUTES} - walked <= {
        "GET /api/sessions/{session_id}/documents/{document_id}/content"  # the document's own bytes, sandboxed
    }
    assert {f"tool {name}" for name in TOOLS} <= walked
    assert [str(finding) for finding in walk.findings] == []
