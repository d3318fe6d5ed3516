"""The one tool contract between the turn graph and orc's MCP server: tool names, which of them a model may plan,
the scope arguments the orchestrator injects, the principal ``_meta`` key and the names offered to models.

Both sides import this module (the graph's router and executor, :mod:`orc.mcp_client`, :mod:`mcp_server`), so a
tool cannot be renamed, or a scope argument added, on one side only. It is a leaf: it imports nothing from orc.
"""

from __future__ import annotations

import re
from typing import Literal

DOCUMENT_CHAT = "document_chat"
"""A grounded answer over the session's attached documents; the graph calls it itself, a model never plans it."""

DOCUMENTS_LIST = "documents.list"
DOCUMENTS_ANALYZE = "documents.analyze"
DOCUMENTS_GET_CONTENT = "documents.get_content"
DOCUMENTS_GET_SUMMARY = "documents.get_summary"
DOCUMENTS_SEARCH = "documents.search"
DOCUMENTS_GET_PAGE = "documents.get_page"
DOCUMENTS_GET_SPAN = "documents.get_span"

CONTEXTS_LIST = "contexts.list"
"""The caller's context tree (organization → folder → usecase): read-only, a model may plan it."""

SESSION_ATTACH_DOCUMENT = "session.attach_document"
SESSION_LIST_DOCUMENTS = "session.list_documents"
SESSION_REMOVE_DOCUMENT = "session.remove_document"

DOCUMENT_TOOLS = frozenset(
    {
        DOCUMENTS_LIST,
        DOCUMENTS_ANALYZE,
        DOCUMENTS_GET_CONTENT,
        DOCUMENTS_GET_SUMMARY,
        DOCUMENTS_SEARCH,
        DOCUMENTS_GET_PAGE,
        DOCUMENTS_GET_SPAN,
        CONTEXTS_LIST,
        SESSION_LIST_DOCUMENTS,
    }
)
"""orc's own plannable document tools (``contexts.list`` too): with no document available, none of them can help,
so no planning call is made."""

TOOL_NAMES = frozenset({*DOCUMENT_TOOLS, DOCUMENT_CHAT, SESSION_ATTACH_DOCUMENT, SESSION_REMOVE_DOCUMENT})
"""Every tool orc's MCP server publishes (to every client; :data:`SESSION_ATTACH_PATH` is stdio-only)."""

SESSION_ATTACH_PATH = "session.attach_path"
"""Attach a local file by path: published only over stdio, and only when allowed folders are configured."""

SESSION_MUTATIONS = frozenset({SESSION_ATTACH_DOCUMENT, SESSION_ATTACH_PATH, SESSION_REMOVE_DOCUMENT})
"""Tools that change the user's session: for MCP clients and the UI, never for a model planning a turn (a
document's text must not be able to make the model delete or add documents)."""

NEVER_PLANNED = frozenset({DOCUMENT_CHAT, *SESSION_MUTATIONS})
"""Tools a model is never offered; every other tool the server publishes (extensions too) it may plan."""

SESSION_ID = "session_id"
CONTEXT_TYPE = "context_type"
CONTEXT_ID = "context_id"
INCLUDE_HISTORICAL = "include_historical"
SCOPE_ARGUMENTS = (SESSION_ID, CONTEXT_TYPE, CONTEXT_ID, INCLUDE_HISTORICAL)
"""The arguments of every scoped (``documents.*``) tool that say which documents a call may see, in their
published order. The orchestrator sets them from the authenticated turn and hides them from the model; an
external MCP client passes them; the server validates them against the principal either way."""

PRINCIPAL_META_KEY = "orc_principal"
"""``_meta`` key carrying the turn's principal; only the in-process server transport trusts it."""


def model_tool_name(mcp_name: str) -> str:
    """OpenAI-style function names reject dots: ``documents.list`` is offered as ``documents__list``."""
    return mcp_name.replace(".", "__")


ToolNameForm = Literal["dotted", "underscore"]
"""How the server spells its tool names to external clients: the design's dotted names (``documents.list``), or
``documents_list`` for clients that only accept ``^[a-zA-Z0-9_-]{1,64}$`` (Claude Desktop, the OpenAI API, Codex,
the Copilot CLI). The in-process orchestrator always talks to a dotted server."""

TOOL_NAME_FORMS: tuple[ToolNameForm, ...] = ("dotted", "underscore")

STDIO_TOOL_NAMES: ToolNameForm = "underscore"
"""The stdio server's form when none is chosen: stdio is what desktop clients start, and Claude Desktop refuses a
server's whole tool list when one name has a dot; underscore names are accepted by every major client."""

HTTP_TOOL_NAMES: ToolNameForm = "dotted"
"""``/api/mcp``'s form when none is chosen: the design's names, as agents and services connecting over HTTP use."""

PORTABLE_TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""The tool-name pattern the strictest MCP hosts enforce."""


def published_tool_name(mcp_name: str, form: ToolNameForm) -> str:
    """The name a tool is published under in ``form``: ``documents.list`` or ``documents_list``."""
    return mcp_name.replace(".", "_") if form == "underscore" else mcp_name


def published_text(text: str, form: ToolNameForm) -> str:
    """``text`` (a description or the instructions) with every orc tool name it mentions spelled as in ``form``."""
    if form == "dotted":
        return text
    for name in sorted(TOOL_NAMES | {SESSION_ATTACH_PATH}, key=len, reverse=True):
        text = text.replace(name, published_tool_name(name, form))
    return text
