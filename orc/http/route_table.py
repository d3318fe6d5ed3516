"""Every route of the HTTP app — API, MCP, page and docs — declared once with its class; every guard reads it.

The guards in front of the app (body size and deadline, stream caps and idle timeouts, the early refusal of
turns, the cross-site check) used to match paths by hand, each its own way, and routes added later slipped past
them: streamed supplies and a context request's event stream had no stream cap. Here a route's class says what
it is, and :data:`GUARDS` says what every guard does with that class; a guard asks :meth:`RouteTable.route_for`
and never looks at a path itself.

``create_app`` refuses to start while the FastAPI app has a route this table does not classify (and
``tests/http/test_route_table.py`` fails), so a new route cannot skip a guard: add it to :data:`ROUTES` with
its class. Admission and quotas stay in the turn pipeline; the table only tells the HTTP edge which requests
are turns, so that a flood of them is refused before it is parsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import Mount, compile_path
from starlette.types import Scope

RouteClass = Literal[
    "turn", "supply", "stream", "upload", "export", "read", "write", "mcp", "page", "docs", "health", "unrouted"
]
"""What a route does, as far as the guards care:

- ``turn``: runs a turn (JSON, or a stream of events when ``Accept`` asks for one);
- ``supply``: resumes a paused turn with supplied context, as JSON or with uploaded files;
- ``stream``: always answers a long-lived stream of events;
- ``upload``: takes documents (multipart);
- ``export``: renders a conversation for download (costly: counted by the export window inside);
- ``read``: reads something of the caller's;
- ``write``: a small JSON change (rename, feedback, delete, settings, the contexts tree);
- ``mcp``: a JSON-RPC message of the MCP server (its notification stream is a ``stream``);
- ``page``, ``docs``, ``health``: the chat page and its assets, the API's documents, liveness;
- ``unrouted``: what matches no route (answered 404 or 405 by the app), under the defaults."""

BodyKind = Literal["none", "json", "files"]
StreamMode = Literal["never", "always", "on_accept"]


@dataclass(frozen=True, slots=True)
class Guards:
    """What the guards do with one class of routes."""

    body: BodyKind
    """``none``: no body is read (one that is sent is refused 413, past 0 bytes); ``json``: up to
    ``ORC_MAX_REQUEST_BYTES``; ``files``: up to ``ORC_MAX_UPLOAD_BYTES`` plus the multipart framing."""
    streams: StreamMode
    """Whether the response is a stream counted against the principal's open streams and ended when idle:
    ``always``, ``on_accept`` (when ``Accept`` asks for NDJSON or server-sent events) or ``never``."""
    turn: bool
    """Runs a turn: refused at once (429) when its principal is known to be over a turn limit."""
    same_site: bool
    """Under cookie sign-in, an unsafe method must come from this site (the MCP endpoint is exempt: its JSON-RPC
    POSTs need a CORS preflight no other site gets past)."""


GUARDS: Mapping[RouteClass, Guards] = {
    "turn": Guards(body="json", streams="on_accept", turn=True, same_site=True),
    "supply": Guards(body="files", streams="on_accept", turn=True, same_site=True),
    "stream": Guards(body="none", streams="always", turn=False, same_site=True),
    "upload": Guards(body="files", streams="never", turn=False, same_site=True),
    "export": Guards(body="none", streams="never", turn=False, same_site=True),
    "read": Guards(body="none", streams="never", turn=False, same_site=True),
    "write": Guards(body="json", streams="never", turn=False, same_site=True),
    "mcp": Guards(body="json", streams="never", turn=False, same_site=False),
    "page": Guards(body="none", streams="never", turn=False, same_site=True),
    "docs": Guards(body="none", streams="never", turn=False, same_site=True),
    "health": Guards(body="none", streams="never", turn=False, same_site=True),
    "unrouted": Guards(body="json", streams="never", turn=False, same_site=True),
}


@dataclass(frozen=True, slots=True)
class Route:
    """One route: its method, its path as FastAPI declares it (``{name}`` matches one segment; a mount's
    ``{path:path}`` matches the rest) and its class."""

    method: str
    path: str
    kind: RouteClass

    @property
    def guards(self) -> Guards:
        """What the guards do with this route."""
        return GUARDS[self.kind]


_CONTEXT_REQUEST = "/api/sessions/{session_id}/context-requests/{request_id}"
_FILES = "/api/sessions/{session_id}/context/files"
_CONTEXTS = "/api/contexts/{context_type}/{context_id}"

ROUTES: tuple[Route, ...] = (
    # chat
    Route("POST", "/api/orc", "turn"),
    # sessions
    Route("GET", "/api/sessions", "read"),
    Route("GET", "/api/sessions/{session_id}", "read"),
    Route("DELETE", "/api/sessions/{session_id}", "write"),
    Route("PATCH", "/api/sessions/{session_id}", "write"),
    Route("POST", "/api/sessions/{session_id}/messages/{message_id}/feedback", "write"),
    Route("GET", "/api/sessions/{session_id}/export", "export"),
    Route("GET", "/api/sessions/{session_id}/artifacts", "read"),
    # context requests of paused turns
    Route("POST", f"{_CONTEXT_REQUEST}/supply", "supply"),
    Route("POST", f"{_CONTEXT_REQUEST}/run-without", "turn"),
    Route("POST", f"{_CONTEXT_REQUEST}/cancel", "write"),
    Route("GET", _CONTEXT_REQUEST, "read"),
    Route("GET", f"{_CONTEXT_REQUEST}/events", "stream"),
    # a session's context files
    Route("GET", "/api/sessions/{session_id}/context", "read"),
    Route("PATCH", "/api/sessions/{session_id}/context", "write"),
    Route("GET", "/api/sessions/{session_id}/context/stream", "stream"),
    Route("GET", "/api/sessions/{session_id}/context/digest", "read"),
    Route("POST", "/api/sessions/{session_id}/context/digest/retry-parse", "write"),
    Route("POST", "/api/sessions/{session_id}/context/parse", "write"),
    Route("POST", _FILES, "upload"),
    Route("GET", f"{_FILES}/{{file_id}}", "read"),
    Route("PUT", f"{_FILES}/{{file_id}}", "upload"),
    Route("DELETE", f"{_FILES}/{{file_id}}", "write"),
    Route("GET", f"{_FILES}/{{file_id}}/digest", "read"),
    Route("POST", f"{_FILES}/{{file_id}}/retry-parse", "write"),
    # the contexts tree and its documents
    Route("PUT", _CONTEXTS, "write"),
    Route("GET", _CONTEXTS, "read"),
    Route("POST", f"{_CONTEXTS}/documents", "upload"),
    Route("GET", f"{_CONTEXTS}/documents", "read"),
    Route("DELETE", f"{_CONTEXTS}/documents/{{document_id}}", "write"),
    # documents and citations
    Route("GET", "/api/sessions/{session_id}/sources", "read"),
    Route("GET", "/api/sessions/{session_id}/documents/{document_id}/content", "read"),
    # the MCP server (streamable HTTP; any path under /api/mcp reaches it)
    Route("POST", "/api/mcp", "mcp"),
    Route("POST", "/api/mcp/{path:path}", "mcp"),
    Route("DELETE", "/api/mcp", "mcp"),
    Route("DELETE", "/api/mcp/{path:path}", "mcp"),
    Route("GET", "/api/mcp", "stream"),
    Route("GET", "/api/mcp/{path:path}", "stream"),
    # the page, the API's documents, liveness
    Route("GET", "/", "page"),
    Route("GET", "/web/{path:path}", "page"),
    Route("GET", "/api/ui-config", "page"),
    Route("GET", "/api/me", "page"),
    Route("GET", "/api/docs", "docs"),
    Route("GET", "/api/openapi.json", "docs"),
    Route("GET", "/api/health", "health"),
)
"""Every route the app serves, with its class. A route missing here stops ``create_app``."""

MCP_METHODS = ("GET", "POST", "DELETE")
"""The methods the MCP server's streamable HTTP transport answers."""

SCOPE_KEY = "orc.route"
"""Where a request's route is kept in its ASGI scope once classified (each guard would otherwise match again)."""


class RouteTable:
    """Finds the :class:`Route` of a request (``HEAD`` as ``GET``; a trailing slash ignored); a request that
    matches none is ``unrouted``."""

    def __init__(self, routes: Iterable[Route] | None = None) -> None:
        self.routes = tuple(ROUTES if routes is None else routes)
        self._by_method: dict[str, list[tuple[re.Pattern[str], Route]]] = {}
        for route in self.routes:
            pattern, _, _ = compile_path(route.path)
            self._by_method.setdefault(route.method, []).append((pattern, route))

    def match(self, method: str, path: str) -> Route:
        """The route of ``method`` ``path``."""
        method = "GET" if method == "HEAD" else method
        if len(path) > 1:
            path = path.rstrip("/") or "/"
        for pattern, route in self._by_method.get(method, ()):
            if pattern.match(path):
                return route
        return Route(method, path, "unrouted")

    def route_for(self, scope: Scope) -> Route:
        """The route of an HTTP request, classified once and kept in its scope."""
        found: Route | None = scope.get(SCOPE_KEY)
        if found is None:
            found = self.match(scope.get("method", "GET"), scope.get("path", ""))
            scope[SCOPE_KEY] = found
        return found

    def declares(self, method: str, path: str) -> bool:
        """Whether ``method`` ``path`` (a path template exactly as FastAPI declares it) is in the table."""
        return any(route.method == method and route.path == path for route in self.routes)


def unclassified(routes: Iterable[tuple[str, str]], table: RouteTable) -> list[str]:
    """The ``METHOD path`` of each served route (method, path template) the table does not declare."""
    return sorted({f"{method} {path}" for method, path in routes if not table.declares(method, path)})


def require_classified(api: FastAPI, mcp_path: str, table: RouteTable) -> None:
    """Raise :class:`RuntimeError`, naming them and saying how to classify them, when ``api`` (with the MCP endpoint
    at ``mcp_path``) serves routes ``table`` does not declare."""
    missing = unclassified(served_routes(api, mcp_path), table)
    if missing:
        classes = ", ".join(kind for kind in GUARDS if kind != "unrouted")
        raise RuntimeError(
            f"routes without a class: {'; '.join(missing)}. Declare each in ROUTES of orc/http/route_table.py with "
            f'its class ({classes}), e.g. Route("GET", "/api/…", "read"), so that the body, stream, turn and '
            "cross-site guards apply to it"
        )


def served_routes(api: FastAPI, mcp_path: str) -> list[tuple[str, str]]:
    """Every (method, path template) ``api`` serves — its routes, its mounts' files — and the MCP endpoint's
    methods at ``mcp_path`` (served beside FastAPI, any path under it)."""
    served = [(method, mcp) for method in MCP_METHODS for mcp in (mcp_path, f"{mcp_path}/{{path:path}}")]
    for context in iter_route_contexts(api.routes):
        route = context.original_route
        if isinstance(route, Mount):
            served.append(("GET", f"{route.path}/{{path:path}}"))
        elif isinstance(route, APIRoute):
            served.extend((method, str(context.path_format)) for method in sorted(context.methods or ()))
        else:
            served.append(("*", str(context.path_format)))  # a kind of route nobody classified yet
    return served
