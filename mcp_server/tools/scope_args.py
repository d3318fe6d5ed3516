"""The scope arguments every document tool accepts, and their resolution against the caller.

``session_id``, ``context_type`` + ``context_id`` (the focus) and ``include_historical`` say which documents a
call may see. External MCP clients pass them; the orchestrator injects them from the authenticated turn and hides
them from the model (:data:`orc.mcp_client.SCOPE_ARGUMENTS`). Either way the server validates them against the
principal: a context of another organization, or one that does not exist, is ``not_found``.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.fastmcp import Context
from pydantic import Field

from mcp_server.scope import resolve_principal
from orc.documents.availability import DocumentScope
from orc.documents.library import DocumentLibrary
from orc.principal import Principal

SessionId = Annotated[
    str | None,
    Field(description="The conversation (session) whose attached documents are available; set by the host."),
]
ContextType = Annotated[
    str | None,
    Field(description="Focus context type: organization, folder or usecase (with context_id); set by the host."),
]
ContextId = Annotated[str | None, Field(description="Focus context id (with context_type); set by the host.")]
IncludeHistorical = Annotated[
    bool,
    Field(description="Also make available the documents of contexts the session focused on before; set by the host."),
]


async def document_scope(
    ctx: Context[Any, Any, Any],
    library: DocumentLibrary,
    *,
    session_id: str | None,
    context_type: str | None,
    context_id: str | None,
    include_historical: bool,
) -> tuple[Principal, DocumentScope]:
    """The principal of the call and the validated scope (raises orc errors; run it inside ``tool_errors``)."""
    principal = resolve_principal(ctx)
    scope = await library.resolve_scope(
        principal,
        session_id=session_id,
        context_type=context_type,
        context_id=context_id,
        include_historical=include_historical,
    )
    return principal, scope
