"""Registering a tool that acts for the caller: its body gets the resolved principal (and, for a scoped tool, the
validated document scope) instead of repeating the MCP plumbing. :func:`principal_tool` and :func:`scoped_tool`
are decorators, as FastMCP's own ``@server.tool()`` is.

A body is an ``async def`` whose own parameters (with their ``Annotated`` descriptions) are published as the
tool's arguments, except two names that the registration fills in:

- ``principal: Principal``: who the call acts for (:func:`mcp_server.scope.resolve_principal`).
- ``scope: DocumentScope`` (scoped tools only): published, at its place in the signature, as the four scope
  arguments of :data:`orc.tool_contract.SCOPE_ARGUMENTS` (``session_id``, ``context_type``, ``context_id``,
  ``include_historical``). External MCP clients pass them; the orchestrator injects them from the authenticated
  turn and hides them from the model. Either way they are validated against the principal: a context of another
  organization, or one that does not exist, is ``not_found``. With neither a session nor a focus the scope is the
  caller's organization (its documents and those of every folder and usecase under it).

The body returns its result model; the tool answers with it as structured content and ``render(result)`` as text,
and every error follows the policy of :func:`mcp_server.tools.tool_errors`.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypedDict, TypeVar, Unpack

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from mcp_server.scope import resolve_principal
from mcp_server.tools import structured_result, tool_errors
from orc.documents.catalog.scopes import DocumentScopes
from orc.tool_contract import CONTEXT_ID, CONTEXT_TYPE, INCLUDE_HISTORICAL, SCOPE_ARGUMENTS, SESSION_ID

PRINCIPAL = "principal"
SCOPE = "scope"
_CONTEXT = "ctx"

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

_SCOPE_TYPES: dict[str, tuple[Any, object]] = {
    SESSION_ID: (SessionId, None),
    CONTEXT_TYPE: (ContextType, None),
    CONTEXT_ID: (ContextId, None),
    INCLUDE_HISTORICAL: (IncludeHistorical, False),
}
"""Each scope argument's published type and default (a KeyError at import if the contract gains one)."""

_SCOPE_PARAMETERS = tuple(
    inspect.Parameter(
        argument,
        inspect.Parameter.KEYWORD_ONLY,
        annotation=_SCOPE_TYPES[argument][0],
        default=_SCOPE_TYPES[argument][1],
    )
    for argument in SCOPE_ARGUMENTS
)


class ToolDetails(TypedDict):
    """What a registration publishes besides the body: the tool's name, title, description and annotations, the
    text of its ``internal_error`` result (``failure``, e.g. "listing the documents failed"), and how its result
    is rendered as text."""

    name: str
    title: str
    description: str
    annotations: ToolAnnotations
    failure: str
    render: Callable[[Any], str]


Body = TypeVar("Body", bound=Callable[..., Awaitable[BaseModel]])


def principal_tool(server: FastMCP, **details: Unpack[ToolDetails]) -> Callable[[Body], Body]:
    """A decorator registering its ``async def`` as the tool ``name``, called with the caller's ``principal``."""

    async def resolve(ctx: Context[Any, Any, Any], arguments: dict[str, Any]) -> dict[str, Any]:
        return {PRINCIPAL: resolve_principal(ctx)}

    return _registering(server, resolve, scoped=False, **details)


def scoped_tool(server: FastMCP, scopes: DocumentScopes, **details: Unpack[ToolDetails]) -> Callable[[Body], Body]:
    """A decorator registering its ``async def`` as the tool ``name``, called with the caller's ``principal`` and
    the ``scope`` its scope arguments name, validated by ``scopes`` (raises orc errors, reported by the error
    policy)."""

    async def resolve(ctx: Context[Any, Any, Any], arguments: dict[str, Any]) -> dict[str, Any]:
        principal = resolve_principal(ctx)
        scope_arguments = {argument: arguments.pop(argument) for argument in SCOPE_ARGUMENTS}
        if all(scope_arguments[argument] is None for argument in (SESSION_ID, CONTEXT_TYPE, CONTEXT_ID)):
            # No session and no focus: what the caller sees by default is its organization, which makes every
            # context's documents available (DESIGN §3). The orchestrator always names its session.
            scope_arguments[CONTEXT_TYPE] = "organization"
            scope_arguments[CONTEXT_ID] = principal.organization
        scope = await scopes.resolve(principal, **scope_arguments)
        return {PRINCIPAL: principal, SCOPE: scope}

    return _registering(server, resolve, scoped=True, **details)


Resolver = Callable[[Context[Any, Any, Any], dict[str, Any]], Awaitable[dict[str, Any]]]


def _registering(
    server: FastMCP, resolve: Resolver, *, scoped: bool, **details: Unpack[ToolDetails]
) -> Callable[[Body], Body]:
    name, failure, render = details["name"], details["failure"], details["render"]

    def register(body: Body) -> Body:
        async def tool(ctx: Context[Any, Any, Any], **arguments: Any) -> CallToolResult:
            with tool_errors(name, failure=failure):
                filled = await resolve(ctx, arguments)
                result = await body(**filled, **arguments)
            return structured_result(result, render(result))

        # FastMCP reads the published arguments from the signature and names the schemas after the function.
        tool.__signature__ = _published_signature(body, scoped=scoped)  # type: ignore[attr-defined]
        tool.__name__ = tool.__qualname__ = body.__name__
        server.add_tool(
            tool,
            name=name,
            title=details["title"],
            description=details["description"],
            annotations=details["annotations"],
            structured_output=True,
        )
        return body

    return register


def _published_signature(body: Callable[..., Any], *, scoped: bool) -> inspect.Signature:
    """The body's signature as FastMCP should see it: filled-in parameters replaced, annotations resolved."""
    hints = typing.get_type_hints(body, include_extras=True)
    filled = {PRINCIPAL, SCOPE} if scoped else {PRINCIPAL}
    parameters = inspect.signature(body).parameters
    if not filled <= parameters.keys():
        raise TypeError(f"{body.__name__} must take {' and '.join(sorted(filled))}")
    published: list[inspect.Parameter] = []
    for parameter in parameters.values():
        if parameter.name == SCOPE and scoped:
            published.extend(_SCOPE_PARAMETERS)
        elif parameter.name != PRINCIPAL:
            # Keyword-only: the scope arguments (with defaults) may sit before arguments without one.
            published.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[parameter.name]))
    # The context is skipped by FastMCP's schema; the result annotation keeps the advertised output schema.
    published.append(inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=Context[Any, Any, Any]))
    return inspect.Signature(published, return_annotation=Annotated[CallToolResult, hints["return"]])
