"""The orchestrator's side of MCP: one client session per turn, opened only when a tool is needed.

The session is owned by a dedicated task because MCP sessions are anyio task-group scoped: they must be
entered and exited in the same task, while graph nodes run in tasks of their own.
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
from mcp.types import CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, TextContent

from orc.errors import ServiceUnavailable

SessionFactory = Callable[[], AbstractAsyncContextManager[ClientSession]]

# Scope arguments are set by the executor from the authenticated turn, never chosen by the model.
SCOPE_ARGUMENTS = frozenset({"session_id", "context_type", "context_id", "include_historical"})


def model_tool_name(mcp_name: str) -> str:
    """OpenAI-style function names reject dots: ``documents.list`` is offered as ``documents__list``."""
    return mcp_name.replace(".", "__")


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """The result of one MCP tool call as the graph sees it."""

    name: str
    arguments: dict[str, Any]
    structured: dict[str, Any] | None
    text: str
    is_error: bool
    duration_ms: float


class McpToolbox:
    """Calls MCP tools for one turn through one lazily opened client session."""

    def __init__(
        self,
        connect: SessionFactory,
        *,
        scope: Mapping[str, Any],
        call_timeout_seconds: float = 120.0,
    ) -> None:
        self._connect = connect
        self._scope = dict(scope)
        self._timeout = timedelta(seconds=call_timeout_seconds)
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._open_lock = asyncio.Lock()
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._error: BaseException | None = None
        self._model_tools: list[BaseTool] | None = None

    @property
    def opened(self) -> bool:
        """Whether this turn needed an MCP session at all."""
        return self._owner is not None

    async def _session_or_open(self) -> ClientSession:
        async with self._open_lock:
            if self._owner is None:
                # A fresh context: the server side must not inherit the graph's run context (its callbacks
                # would count document_chat's own model call a second time), just as a remote server would not.
                self._owner = asyncio.create_task(
                    self._own_session(), name="mcp-session", context=contextvars.Context()
                )
        await self._ready.wait()
        if self._session is None:
            raise ServiceUnavailable("the document tools are unavailable right now; retry") from self._error
        return self._session

    async def _own_session(self) -> None:
        try:
            async with self._connect() as session:
                self._session = session
                self._ready.set()
                await self._closing.wait()
        except BaseException as exc:  # the waiter re-raises it as ServiceUnavailable
            self._error = exc
        finally:
            self._session = None
            self._ready.set()

    async def model_tools(self, *, exclude: Iterable[str] = ()) -> list[BaseTool]:
        """The server's tools as LangChain tools for binding to a model: renamed, scope arguments hidden."""
        if self._model_tools is None:
            session = await self._session_or_open()
            self._model_tools = [_for_model(tool) for tool in await load_mcp_tools(session)]
        excluded = {model_tool_name(name) for name in exclude}
        return [tool for tool in self._model_tools if tool.name not in excluded]

    async def call(self, name: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        """Call ``name`` with the model's (or the executor's) arguments plus this turn's scope."""
        args = {key: value for key, value in arguments.items() if key not in SCOPE_ARGUMENTS}
        args.update(self._scope)
        started = time.perf_counter()
        session = await self._session_or_open()
        # Sent as a plain tools/call request rather than ClientSession.call_tool: that helper first lists the
        # tools and then re-validates the JSON Schema itself on every call (about 10 ms here), while orc
        # validates each structured result against its pydantic contract where it is used.
        result = await session.send_request(
            ClientRequest(CallToolRequest(params=CallToolRequestParams(name=name, arguments=args))),
            CallToolResult,
            request_read_timeout_seconds=self._timeout,
        )
        text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
        return ToolOutcome(
            name=name,
            arguments=args,
            structured=result.structuredContent,
            text=text,
            is_error=bool(result.isError),
            duration_ms=(time.perf_counter() - started) * 1000,
        )

    async def aclose(self) -> None:
        """Close the session (if one was opened) and wait for its owner task."""
        self._closing.set()
        if self._owner is not None:
            with contextlib.suppress(Exception):
                await self._owner


def _for_model(tool: BaseTool) -> BaseTool:
    schema = tool.args_schema
    if isinstance(schema, dict):
        properties = {k: v for k, v in schema.get("properties", {}).items() if k not in SCOPE_ARGUMENTS}
        required = [k for k in schema.get("required", []) if k not in SCOPE_ARGUMENTS]
        schema = {**schema, "properties": properties, "required": required}
    return tool.model_copy(
        update={
            "name": model_tool_name(tool.name),
            "args_schema": schema,
            "metadata": {"mcp_name": tool.name},
        }
    )
