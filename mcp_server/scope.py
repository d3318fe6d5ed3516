"""Who a tool call acts for. The scope is never a tool argument the model could choose.

- Streamable HTTP: the ASGI authentication wrapper in front of ``/api/mcp`` stores the authenticated
  :class:`~orc.principal.Principal` in ``scope["state"]["principal"]``; the MCP SDK hands the Starlette
  request to the tool context (``ctx.request_context.request``) even in stateless mode, where the tool runs in
  the session manager's task group and therefore cannot see the request's context variables.
- In-memory and stdio: :data:`current_principal` is set before the server task starts (the orchestrator
  does it around the in-memory session, ``python -m mcp_server`` at startup); the server task inherits it.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from mcp.server.fastmcp import Context
from mcp.server.fastmcp.exceptions import ToolError
from pydantic import ValidationError
from starlette.requests import Request

from orc.principal import Principal
from orc.tool_contract import PRINCIPAL_META_KEY

current_principal: ContextVar[Principal | None] = ContextVar("orc_mcp_principal", default=None)
"""The principal of a stdio session (or of an in-memory session opened for one principal)."""

in_process_session: ContextVar[bool] = ContextVar("orc_mcp_in_process", default=False)
"""Set only inside the orchestrator's own in-memory server task: there, calls name their principal in ``_meta``."""

PRINCIPAL_STATE_KEY = "principal"
"""The key under ``scope["state"]`` where the HTTP authentication wrapper puts the principal."""


def resolve_principal(ctx: Context[Any, Any, Any]) -> Principal:
    """The principal the current tool call acts for; :class:`ToolError` ``unauthenticated`` when none."""
    request = ctx.request_context.request
    if isinstance(request, Request):
        # Over HTTP only the authenticated request counts: never fall back to a process-wide principal.
        principal = request.scope.get("state", {}).get(PRINCIPAL_STATE_KEY)
    elif in_process_session.get():
        meta = ctx.request_context.meta
        raw = (meta.model_extra or {}).get(PRINCIPAL_META_KEY) if meta is not None else None
        try:
            principal = Principal.model_validate(raw) if raw is not None else None
        except ValidationError:
            principal = None
    else:
        principal = current_principal.get()
    if not isinstance(principal, Principal):
        raise ToolError("unauthenticated: this MCP connection has no authenticated principal; sign in and retry")
    return principal
