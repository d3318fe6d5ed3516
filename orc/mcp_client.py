"""The orchestrator's side of MCP: one client session per process, and a per-turn toolbox on top of it.

Opening an MCP session costs an initialize handshake (and, in-memory, the SDK's package-version lookup)
that a turn would pay every time; one long-lived session serves every turn concurrently instead. The session
is owned by a dedicated task because MCP sessions are anyio task-group scoped: they must be entered and exited
in the same task, while turns run in tasks of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from langchain_core.tools import BaseTool
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession
from mcp.types import (
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    ClientRequest,
    RequestParams,
    TextContent,
)

from orc.errors import ServiceUnavailable
from orc.principal import Principal
from orc.telemetry import Span, span
from orc.tool_contract import PRINCIPAL_META_KEY, SCOPE_ARGUMENTS, model_tool_name

SessionFactory = Callable[[], AbstractAsyncContextManager[ClientSession]]

CALL_TIMEOUT_SECONDS = 120.0
"""Longest one tool call of a turn may take: a guard inside the turn, whose own deadline (``ORC_TURN_TIMEOUT``) and
model timeout (``ORC_MODEL_TIMEOUT_SECONDS``) are the bounds an operator sets."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The result of one MCP tool call as the graph sees it."""

    name: str
    arguments: dict[str, Any]
    structured: dict[str, Any] | None
    text: str
    is_error: bool
    duration_ms: float


class McpConnection:
    """One MCP client session for the whole process, opened on first use and reopened after a failure."""

    def __init__(self, connect: SessionFactory) -> None:
        self._connect = connect
        self._lock = asyncio.Lock()
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._model_tools: list[BaseTool] | None = None

    async def session(self) -> ClientSession:
        """The open session; the first caller opens it, concurrent callers wait for that."""
        session = self._session
        if session is not None:
            return session
        async with self._lock:
            if self._session is None:
                ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
                self._closing = asyncio.Event()
                # A fresh context: the server side must not inherit a turn's run context (its callbacks would
                # count document_chat's own model call a second time), just as a remote server would not.
                self._owner = asyncio.create_task(self._own(ready), name="mcp-session", context=contextvars.Context())
                try:
                    self._session = await ready
                except Exception as exc:
                    raise ServiceUnavailable("the document tools are unavailable right now; retry") from exc
            return self._session

    async def _own(self, ready: asyncio.Future[ClientSession]) -> None:
        try:
            async with self._connect() as session:
                ready.set_result(session)
                await self._closing.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
        finally:
            # A session that ended (closed or broken) is replaced on next use.
            self._session = None

    async def model_tools(self) -> list[BaseTool]:
        """The server's tools as LangChain tools (renamed, scope arguments hidden); listed once per process."""
        if self._model_tools is None:
            self._model_tools = [_for_model(tool) for tool in await load_mcp_tools(await self.session())]
        return self._model_tools

    async def aclose(self) -> None:
        """Close the session and wait for its owner task."""
        self._closing.set()
        if self._owner is not None:
            with contextlib.suppress(Exception):
                await self._owner
            self._owner = None


class McpToolbox:
    """Calls MCP tools for one turn: the turn's principal and scope are added to every call."""

    def __init__(
        self,
        connection: McpConnection,
        *,
        principal: Principal,
        scope: Mapping[str, Any],
    ) -> None:
        self._connection = connection
        self._meta = RequestParams.Meta(**{PRINCIPAL_META_KEY: principal.model_dump()})
        self._scope = dict(scope)
        self._timeout = timedelta(seconds=CALL_TIMEOUT_SECONDS)

    async def model_tools(self, *, exclude: Iterable[str] = ()) -> list[BaseTool]:
        """Tools to offer the model, without those named in ``exclude`` (MCP names)."""
        excluded = {model_tool_name(name) for name in exclude}
        return [tool for tool in await self._connection.model_tools() if tool.name not in excluded]

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Call ``name`` with the model's (or the executor's) arguments plus this turn's scope."""
        # Scope arguments come from the authenticated turn, never from the model.
        args = {key: value for key, value in arguments.items() if key not in SCOPE_ARGUMENTS}
        args.update(self._scope)
        started = time.perf_counter()
        with span("tool.call", {"orc.tool.name": name}) as current:
            return await self._call(name, args, started, current)

    async def _call(self, name: str, args: dict[str, Any], started: float, current: Span) -> ToolOutcome:
        session = await self._connection.session()
        # Sent as a plain tools/call request rather than ClientSession.call_tool: that helper first lists the
        # tools and then re-validates the JSON Schema itself on every call (costly on every turn), while orc
        # validates each structured result against its pydantic contract where it is used.
        result = await session.send_request(
            ClientRequest(CallToolRequest(params=CallToolRequestParams(name=name, arguments=args, _meta=self._meta))),
            CallToolResult,
            request_read_timeout_seconds=self._timeout,
        )
        text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
        if current.is_recording():
            current.set_attributes({"orc.tool.is_error": bool(result.isError), "orc.tool.result_chars": len(text)})
            cache = _cache_outcome(result.structuredContent)
            if cache is not None:
                current.set_attribute("orc.cache", cache)
        return ToolOutcome(
            name=name,
            arguments=args,
            structured=result.structuredContent,
            text=text,
            is_error=bool(result.isError),
            duration_ms=(time.perf_counter() - started) * 1000,
        )


def _cache_outcome(structured: dict[str, Any] | None) -> str | None:
    """``hit``/``miss`` of a tool that reports whether it reused processed files (``document_chat``)."""
    metadata = structured.get("metadata") if structured else None
    cache = metadata.get("cache") if isinstance(metadata, dict) else None
    return cache if isinstance(cache, str) else None


def _for_model(tool: BaseTool) -> BaseTool:
    schema = tool.args_schema
    if isinstance(schema, dict):
        properties = {k: v for k, v in schema.get("properties", {}).items() if k not in SCOPE_ARGUMENTS}
        required = [k for k in schema.get("required", []) if k not in SCOPE_ARGUMENTS]
        schema = {**schema, "properties": properties, "required": required}
    return tool.model_copy(
        update={"name": model_tool_name(tool.name), "args_schema": schema, "metadata": {"mcp_name": tool.name}}
    )
