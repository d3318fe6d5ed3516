"""Build the orc MCP server: the document tools over the ``orc.documents`` services.

The server is transport-agnostic; :mod:`mcp_server.stdio` and :mod:`mcp_server.http` serve it, and the
orchestrator connects to it in memory (``mcp.shared.memory``).
"""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.utilities.func_metadata import ArgModelBase
from pydantic import ConfigDict, model_validator

from mcp_server.services import DocumentChatServices, McpServices
from mcp_server.tools import document_chat, documents, session
from orc.tool_contract import SCOPE_ARGUMENTS

INSTRUCTIONS = """orc document tools. Every call is scoped to the authenticated user, to the conversation given as
session_id and to the focus context (context_type, context_id). Start with documents.list; use documents.analyze
for documents that are not ready; search with documents.search; cite evidence with the refs the tools return
([document::S<n>])."""


def build_mcp_server(services: McpServices, *, name: str = "orc") -> FastMCP:
    """A FastMCP server with every tool family registered; nothing is started."""
    server = _empty_server(name)
    document_chat.register(server, services)
    documents.register(server, services.library)
    session.register(server, services.library)
    _forbid_unknown_arguments(server)
    return server


def build_document_chat_server(services: DocumentChatServices, *, name: str = "orc") -> FastMCP:
    """A FastMCP server with ``document_chat`` only (no document library): nothing is started."""
    server = _empty_server(name)
    document_chat.register(server, services)
    _forbid_unknown_arguments(server)
    return server


def _forbid_unknown_arguments(server: FastMCP) -> None:
    """Make every registered tool refuse arguments it does not declare (FastMCP's argument models ignore them).

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
            (loose,),
            {
                "model_config": ConfigDict(**loose.model_config, extra="forbid"),
                "_drop_undeclared_scope": model_validator(mode="before")(drop_undeclared_scope),
            },
        )
        tool.fn_metadata.arg_model = strict
        tool.parameters["additionalProperties"] = False


def _empty_server(name: str) -> FastMCP:
    # log_level WARNING: FastMCP calls logging.basicConfig(); WARNING is the root logger's default anyway,
    # so an application that has not configured logging does not get its level changed by building a server.
    return FastMCP(name=name, instructions=INSTRUCTIONS, log_level="WARNING")
