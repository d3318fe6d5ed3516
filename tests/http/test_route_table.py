"""Every route the app serves is classified by the route table, and the guards take what they do from it: a route
added later without a class stops the app from starting, and one added with a class gets that class's guards."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI

from orc.http import routes_documents, routes_handoff_events
from orc.http.app import MCP_PATH, Dispatcher, create_app
from orc.http.route_table import (
    GUARDS,
    ROUTES,
    Route,
    RouteTable,
    require_classified,
    served_routes,
    unclassified,
)
from orc.http.stream_limits import is_stream
from orc.settings import Settings


def fastapi_app_of(app: Any) -> FastAPI:
    while not isinstance(app, Dispatcher):
        app = app.app
    api: FastAPI = app.api
    return api


def test_every_route_the_app_serves_has_a_class_and_the_table_names_no_route_it_does_not_serve() -> None:
    api = fastapi_app_of(create_app(Settings()))
    served = served_routes(api, MCP_PATH)

    assert unclassified(served, RouteTable()) == []
    assert sorted({(route.method, route.path) for route in ROUTES}) == sorted(set(served))
    assert {"POST /api/orc", "GET /api/mcp", "GET /", "GET /web/{path:path}", "GET /api/docs"} <= {
        f"{method} {path}" for method, path in served
    }


def app_with_a_new_route() -> FastAPI:
    """An app with two of orc's routers and one route added later: a digest view's event stream."""
    api = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    api.include_router(routes_documents.router, prefix="/api")
    api.include_router(routes_handoff_events.router, prefix="/api")

    @api.get("/api/sessions/{session_id}/digest-events")
    async def digest_events(session_id: str) -> dict[str, str]:
        return {}

    return api


def test_a_route_added_without_a_class_is_refused_at_start_up_with_how_to_classify_it() -> None:
    with pytest.raises(RuntimeError) as refused:
        require_classified(app_with_a_new_route(), MCP_PATH, RouteTable())

    message = str(refused.value)
    assert message.startswith("routes without a class: GET /api/sessions/{session_id}/digest-events.")
    assert "ROUTES of orc/http/route_table.py" in message and "stream" in message


def test_the_same_route_declared_with_a_class_starts_and_gets_that_class_s_guards() -> None:
    added = Route("GET", "/api/sessions/{session_id}/digest-events", "stream")
    table = RouteTable((*ROUTES, added))

    require_classified(app_with_a_new_route(), MCP_PATH, table)

    assert table.match("GET", "/api/sessions/s1/digest-events") == added
    assert is_stream(_scope("GET", "/api/sessions/s1/digest-events"), table)


def _scope(method: str, path: str, accept: str = "") -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "headers": [(b"accept", accept.encode())]}


@pytest.mark.parametrize(
    ("method", "path", "accept", "streams"),
    [
        ("GET", "/api/mcp", "", True),
        ("GET", "/api/sessions/s1/context/stream", "", True),
        ("GET", "/api/sessions/s1/context-requests/req-1/events", "", True),
        ("POST", "/api/orc", "application/x-ndjson", True),
        ("POST", "/api/orc", "application/json", False),
        ("POST", "/api/sessions/s1/context-requests/req-1/supply", "text/event-stream", True),
        ("POST", "/api/sessions/s1/context-requests/req-1/run-without", "application/x-ndjson", True),
        ("POST", "/api/sessions/s1/context-requests/req-1/cancel", "application/x-ndjson", False),
        ("GET", "/api/sessions/s1", "text/event-stream", False),
        ("GET", "/api/nowhere", "text/event-stream", False),
    ],
)
def test_streams_are_the_requests_whose_route_class_streams(method: str, path: str, accept: str, streams: bool) -> None:
    assert is_stream(_scope(method, path, accept), RouteTable()) is streams


def test_a_request_is_matched_whatever_its_trailing_slash_and_head_reads_as_get() -> None:
    table = RouteTable()

    assert table.match("POST", "/api/orc/").kind == "turn"
    assert table.match("HEAD", "/api/sessions/s1/export").kind == "export"
    assert table.match("GET", "/web/app.js").kind == "page"
    assert table.match("POST", "/api/mcp/").kind == "mcp"
    assert table.match("PUT", "/api/orc").kind == "unrouted"
    assert table.match("GET", "/api/sessions/s1/context/files/f1/digest/extra").kind == "unrouted"


def test_every_class_has_its_guards_and_only_the_mcp_endpoint_is_exempt_from_the_same_site_check() -> None:
    assert {route.kind for route in ROUTES} | {"unrouted"} == set(GUARDS)
    assert {kind for kind, guards in GUARDS.items() if not guards.same_site} == {"mcp"}
    assert {kind for kind, guards in GUARDS.items() if guards.turn} == {"turn", "supply"}
