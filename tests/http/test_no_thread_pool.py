"""No request goes through FastAPI's thread pool: every route and dependency is a coroutine.

FastAPI runs a plain ``def`` route or dependency with ``run_in_threadpool``; under concurrent turns those
hand-offs cost more than the turns themselves (bench/README.md, "Serving choices the figures rest on").
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from orc.http import create_app
from orc.settings import Settings


def api_routes(routes: list[Any]) -> Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        # FastAPI 0.16x keeps an included router behind a wrapper; older versions copy its routes.
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from api_routes(included.routes)


def calls(dependant: Dependant) -> Iterator[Any]:
    for dependency in dependant.dependencies:
        if dependency.call is not None:
            yield dependency.call
        yield from calls(dependency)


def test_every_route_and_dependency_of_the_app_is_a_coroutine() -> None:
    app = create_app(Settings())
    # create_app wraps the FastAPI app in its middlewares, down to Dispatcher(api, mcp).
    wrapped: Any = app
    while not hasattr(wrapped, "api"):
        wrapped = wrapped.app
    api = wrapped.api
    routes = list(api_routes(api.routes))

    assert {"/orc", "/sessions/{session_id}", "/api/health"} <= {route.path for route in routes}
    blocking = [
        f"{route.path}: {getattr(call, '__qualname__', call)}"
        for route in routes
        for call in (route.endpoint, *calls(route.dependant))
        if not inspect.iscoroutinefunction(call)
    ]
    assert blocking == []
