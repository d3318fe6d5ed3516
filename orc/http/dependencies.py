"""Request-scoped dependencies: the orchestrator built in the lifespan, and the authenticated principal."""

from __future__ import annotations

from fastapi import Request

from orc.orchestrator import Orchestrator
from orc.principal import Principal


def orchestrator(request: Request) -> Orchestrator:
    """The process's orchestrator (built once in the app lifespan)."""
    return request.app.state.orchestrator


def principal(request: Request) -> Principal:
    """The caller, from the configured authenticator."""
    return request.app.state.authenticator.authenticate(request.headers)
