"""Protocol edges: MCP calls with unknown tools or undeclared arguments are errors, an unexpected failure is an
ordinary 500 problem that leaves the connection usable, and a client that never finishes its headers is cut off."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from starlette.types import ASGIApp, Receive, Scope, Send

from orc.http import create_app
from orc.http.connection_limits import HeaderDeadlineProtocol
from orc.settings import Settings
from tests.adversarial.uvicorn_server import serving
from tests.http.conftest import open_client
from tests.http.test_mcp_endpoint import KEYS, mcp_session
from tests.support import lifespan

DEADLINE_SECONDS = 10.0


@pytest.fixture
async def app() -> AsyncIterator[ASGIApp]:
    async with lifespan(create_app(Settings(auth="api-key", api_keys=KEYS))) as manager:
        yield manager.app


async def test_an_mcp_call_of_an_unknown_tool_is_an_error(app: ASGIApp) -> None:
    async with mcp_session(app, "key-alice") as session:
        result = await session.call_tool("documents.delete_everything", {})

    assert result.isError


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("documents.list", {"session_id": "alice-conv", "limit": 5, "evil": "1"}),
        ("documents.search", {"session_id": "alice-conv", "query": "rent", "document_idz": ["x"]}),
        ("document_chat", {"question": "What is the rent?", "session_id": "alice-conv", "system_prompt": "obey"}),
    ],
)
async def test_an_mcp_call_with_an_undeclared_argument_is_an_error(
    app: ASGIApp, tool: str, arguments: dict[str, Any]
) -> None:
    async with mcp_session(app, "key-alice") as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        result = await session.call_tool(tool, arguments)

    schema = listed[tool].inputSchema
    undeclared = next(name for name in arguments if name not in schema["properties"])
    assert result.isError
    text = str(result.content[0])
    assert "invalid_input: " in text
    assert f"{undeclared}: not an argument of this tool" in text
    assert schema.get("additionalProperties") is False


class Crashing(BaseChatModel):
    """A model whose every call fails with an error orc does not know (and a secret in its message)."""

    @property
    def _llm_type(self) -> str:
        return "crashing"

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        raise RuntimeError("boom: AccountKey=c2VjcmV0LWtleQ==; sk-live-0123456789abcdef")


async def test_an_unexpected_failure_is_an_ordinary_500_problem_without_its_details(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("INFO")
    # ASGITransport re-raises what escapes the app: the 500 must end inside it, as uvicorn needs to keep the
    # connection open.
    async with open_client(Settings(), model=Crashing()) as client:
        failed = await client.post("/api/orc", json={"question": "What is the rent?"})
        after = await client.get("/api/health")

    assert failed.status_code == 500 and failed.json()["code"] == "internal_error"
    assert "boom" not in failed.text
    assert after.status_code == 200
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "c2VjcmV0LWtleQ" not in logged and "sk-live" not in logged
    assert all(record.exc_info is None for record in caplog.records if record.levelname != "DEBUG")


async def failing_app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture
def server() -> Iterator[int]:
    """uvicorn with orc serve's connection options (a header deadline of a fraction of a second) on loopback."""

    class QuickDeadline(HeaderDeadlineProtocol):
        header_timeout = 0.3

    with serving(failing_app, QuickDeadline) as port:
        yield port


def test_a_client_that_never_finishes_its_headers_is_disconnected(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server), timeout=DEADLINE_SECONDS) as slow:
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n")
        started = time.monotonic()
        closed = slow.recv(1024)

    assert closed == b""
    assert time.monotonic() - started < DEADLINE_SECONDS


def test_a_client_that_sends_its_headers_in_time_is_answered_and_kept_alive(server: int) -> None:
    with httpx.Client(base_url=f"http://127.0.0.1:{server}") as client:
        first = client.get("/")
        second = client.get("/")

    assert (first.status_code, second.status_code) == (200, 200)
    assert first.headers.get("connection") != "close"
