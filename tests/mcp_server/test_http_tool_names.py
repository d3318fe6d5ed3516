"""/api/mcp with ORC_MCP_TOOL_NAMES=underscore: the same tools as documents_list etc., never attach-by-path."""

from __future__ import annotations

from pathlib import Path

from orc.http import create_app
from orc.settings import ApiKeyPrincipal, Settings
from tests.http.test_mcp_endpoint import mcp_session
from tests.support import lifespan


async def test_the_http_endpoint_publishes_underscore_names_and_answers_calls(tmp_path: Path) -> None:
    keys = {"key-alice": ApiKeyPrincipal(organization="contoso", user="alice")}
    settings = Settings(
        home=tmp_path, auth="api-key", api_keys=keys, mcp_tool_names="underscore", mcp_allowed_dirs=[tmp_path]
    )
    async with lifespan(create_app(settings)) as manager, mcp_session(manager.app, "key-alice") as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        listed = await session.call_tool("documents_list", {})

    assert {"documents_list", "contexts_list", "session_attach_document"} <= names
    assert not any("." in name for name in names)
    assert "session_attach_path" not in names
    assert listed.isError is False
    assert listed.structuredContent is not None
    assert listed.structuredContent["focus_context"] == {"type": "organization", "id": "contoso"}
