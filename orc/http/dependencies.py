"""Request-scoped dependencies: the orchestrator built in the lifespan, and the authenticated principal.

They are coroutines although they never wait: FastAPI runs a plain ``def`` dependency in its thread pool, a
thread hop per dependency per request, which under 100 concurrent turns cost more than the turns' own work.
"""

from __future__ import annotations

from fastapi import Request

from orc.orchestrator import Orchestrator
from orc.principal import Principal


async def orchestrator(request: Request) -> Orchestrator:
    """The process's orchestrator (built once in the app lifespan)."""
    return request.app.state.orchestrator


async def principal(request: Request) -> Principal:
    """The caller, from the configured authenticator."""
    return request.app.state.authenticator.authenticate(request.headers)
