"""A principal named in a call's _meta is trusted only on the orchestrator's own in-process session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest
from mcp import ClientSession
from mcp.shared.memory import create_connected_server_and_client_session
from mcp.types import CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, RequestParams

from orc.composition import build_runtime, in_memory_mcp
from orc.documents.intake.uploads import Upload
from orc.mcp_client import McpToolbox
from orc.principal import Principal
from orc.settings import Settings
from orc.tool_contract import PRINCIPAL_META_KEY

ALICE = Principal(organization="contoso", user="alice")
QUESTION = {"question": "What is the rent?", "document_names": ["lease.txt"], "session_id": "conv"}


@pytest.fixture
async def runtime_with_alices_document() -> AsyncIterator[object]:
    async with build_runtime(Settings()) as runtime:
        await runtime.foundation.session_files.add(
            ALICE, "conv", [Upload("lease.txt", b"The monthly rent is 900 euros.")]
        )
        yield runtime


async def call_with_meta(session: ClientSession, principal: Principal) -> CallToolResult:
    meta = RequestParams.Meta(**{PRINCIPAL_META_KEY: principal.model_dump()})
    request = CallToolRequest(params=CallToolRequestParams(name="document_chat", arguments=QUESTION, _meta=meta))
    return await session.send_request(ClientRequest(request), CallToolResult)


async def test_the_orchestrators_session_acts_for_the_principal_each_call_names(
    runtime_with_alices_document: object,
) -> None:
    connection = in_memory_mcp(runtime_with_alices_document.documents.server)  # type: ignore[attr-defined]
    try:
        as_alice = McpToolbox(connection, principal=ALICE, scope={"session_id": "conv"})
        as_mallory = McpToolbox(
            connection, principal=Principal(organization="fabrikam", user="m"), scope={"session_id": "conv"}
        )
        alice = await as_alice.call("document_chat", {k: v for k, v in QUESTION.items() if k != "session_id"})
        mallory = await as_mallory.call("document_chat", QUESTION)
    finally:
        await connection.aclose()

    assert not alice.is_error and "900" in str(alice.structured)
    assert mallory.is_error and "not_found" in mallory.text


async def test_any_other_session_ignores_a_principal_in_meta(runtime_with_alices_document: object) -> None:
    server = runtime_with_alices_document.documents.server  # type: ignore[attr-defined]
    async with AsyncExitStack() as stack:
        session = await stack.enter_async_context(create_connected_server_and_client_session(server))
        result = await call_with_meta(session, ALICE)

    assert result.isError
    assert "unauthenticated" in result.content[0].text  # type: ignore[union-attr]
