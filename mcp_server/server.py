"""Build the orc MCP server: the document tools over the ``orc.documents`` services.

The server is transport-agnostic; :mod:`mcp_server.stdio` and :mod:`mcp_server.http` serve it, and the
orchestrator connects to it in memory (``mcp.shared.memory``).
"""

from __future__ import annotations

import logging
from importlib.metadata import version
from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.fastmcp.utilities.func_metadata import ArgModelBase
from pydantic import ConfigDict, ValidationError, model_validator

from mcp_server.names import publish_names_in_results
from mcp_server.services import DocumentChatServices, McpServices
from mcp_server.tools import argument_errors, contexts, document_chat, documents, session
from orc.tool_contract import SCOPE_ARGUMENTS, ToolNameForm, published_text, published_tool_name

INSTRUCTIONS = """orc document tools. Every call is scoped to the authenticated user, to the conversation given as
session_id and to the focus context (context_type, context_id). Start with documents.list; use documents.analyze
for documents that are not ready; search with documents.search; cite evidence with the refs the tools return
([document::S<n>])."""


class OrcMCP(FastMCP):
    """A FastMCP server that reports orc's version and publishes tool names in one :data:`ToolNameForm`.

    Every registration (orc's tool families and extensions alike) goes through :meth:`add_tool`, so the name and
    the tool names a description mentions are spelled once, here, for the whole server.
    """

    def __init__(self, name: str, *, tool_names: ToolNameForm = "dotted") -> None:
        # FastMCP's constructor calls logging.basicConfig() with a Rich handler on the root logger: configuring
        # logging is the embedding application's prerogative, and basicConfig() does nothing while the root logger
        # has a handler, so one stands there for the duration of the call.
        root, guard = logging.getLogger(), logging.NullHandler()
        root.addHandler(guard)
        try:
            super().__init__(name=name, instructions=published_text(INSTRUCTIONS, tool_names), log_level="WARNING")
        finally:
            root.removeHandler(guard)
        self.tool_names: ToolNameForm = tool_names
        publish_names_in_results(self._mcp_server, tool_names)
        # serverInfo.version: FastMCP takes no version argument and would report the MCP SDK's own version. Read
        # from the installed distribution (the same as orc.__version__): importing the orc package here would
        # reach, for the layer check, everything it exports.
        self._mcp_server.version = version("orc")

    def add_tool(self, fn: Any, name: str | None = None, *args: Any, **kwargs: Any) -> None:
        """Register ``fn`` under ``name`` spelled in this server's form (its description likewise)."""
        if name is not None:
            name = published_tool_name(name, self.tool_names)
        if kwargs.get("description"):
            kwargs["description"] = published_text(kwargs["description"], self.tool_names)
        super().add_tool(fn, name, *args, **kwargs)


def build_mcp_server(services: McpServices, *, name: str = "orc", tool_names: ToolNameForm = "dotted") -> OrcMCP:
    """A FastMCP server with every tool family registered; nothing is started.

    ``tool_names="underscore"`` publishes ``documents_list`` etc. for external clients that refuse dots; the
    orchestrator's in-process server is always dotted (:mod:`orc.tool_contract` names).
    """
    server = OrcMCP(name, tool_names=tool_names)
    document_chat.register(server, services)
    documents.register(server, services.library, services.scopes)
    contexts.register(server, services.directory)
    session.register(server, services.session_files, services.scopes)
    _forbid_unknown_arguments(server)
    return server


def build_document_chat_server(services: DocumentChatServices, *, name: str = "orc") -> OrcMCP:
    """A FastMCP server with ``document_chat`` only (no document library): nothing is started."""
    server = OrcMCP(name)
    document_chat.register(server, services)
    _forbid_unknown_arguments(server)
    return server


class _PlainArgumentErrors(ArgModelBase):
    """An argument model whose validation errors are orc's ``invalid_input`` tool errors, one line per argument.

    FastMCP validates a call's arguments before the tool runs and reports pydantic's text as it is (a line of
    "For further information visit https://errors.pydantic.dev/…" per argument); a client reads this instead."""

    @classmethod
    def model_validate(cls, obj: Any, **kwargs: Any) -> Any:
        """Validate ``obj`` as the tool's arguments; :class:`ToolError` ``invalid_input: …`` when they do not fit."""
        try:
            return super().model_validate(obj, **kwargs)
        except ValidationError as exc:
            raise ToolError(argument_errors(exc)) from None


def _forbid_unknown_arguments(server: FastMCP) -> None:
    """Make every registered tool refuse arguments it does not declare (FastMCP's argument models ignore them),
    and report arguments that do not fit in words (:class:`_PlainArgumentErrors`).

    A misspelt argument silently ignored is a call that does something else than asked (``document_ids``
    dropped means "search everything"). The scope arguments are the one exception: the orchestrator sends the
    turn's scope with every call, and a tool that is not scoped by them just does not use them.
    """
    for tool in server._tool_manager.list_tools():
        loose = tool.fn_metadata.arg_model
        declared = set(loose.model_fields) | {field.alias for field in loose.model_fields.values() if field.alias}

        def drop_undeclared_scope(data: Any, declared: set[str] = declared) -> Any:
            if isinstance(data, dict):
                return {key: value for key, value in data.items() if key in declared or key not in SCOPE_ARGUMENTS}
            return data

        strict: type[ArgModelBase] = type(
            loose.__name__,
            (_PlainArgumentErrors, loose),
            {
                "model_config": ConfigDict(**loose.model_config, extra="forbid"),
                "_drop_undeclared_scope": model_validator(mode="before")(drop_undeclared_scope),
            },
        )
        tool.fn_metadata.arg_model = strict
        tool.parameters["additionalProperties"] = False
