"""The FastAPI app: ``/api/orc``, sessions and their files, ``/api/mcp``, ``/api/health`` and the chat page at ``/``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from langchain_core.language_models import BaseChatModel
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_server.http import build_mcp_http_app
from orc import __version__, log_safety
from orc.admission import UNLIMITED, Admission
from orc.composition import Services, Stores, build_runtime
from orc.errors import OrcError
from orc.http import (
    page,
    problems,
    routes_context,
    routes_contexts,
    routes_documents,
    routes_handoff,
    routes_handoff_events,
    routes_orc,
    routes_sessions,
)
from orc.http.admission import EarlyRefusal
from orc.http.auth import Authenticator, RefuseEveryRequest, authenticator_for
from orc.http.body_deadline import BodyDeadline
from orc.http.csrf import CsrfGuard
from orc.http.limits import BodySizeLimit
from orc.http.openapi_events import add_event_schemas
from orc.http.output_door import OutputDoor
from orc.http.response_headers import NoSniffing
from orc.http.route_table import BodyKind, RouteTable, require_classified
from orc.http.stream_limits import StreamBounds, StreamLimits
from orc.output_policy import OutputPolicy
from orc.settings import Settings

MCP_PATH = "/api/mcp"
OPENAPI_PATH = "/api/openapi.json"
# Multipart framing on top of the file bytes themselves.
_MULTIPART_OVERHEAD = 64 * 1024


class McpEndpoint:
    """Serves ``/api/mcp`` (with or without a trailing slash): authenticates, then hands over to the MCP app.

    The authenticated principal goes into ``scope["state"]``, where the MCP tools read it; identity never
    comes from tool arguments.
    """

    def __init__(self, authenticator: Authenticator) -> None:
        self.authenticator = authenticator
        self.target: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.target is None:
            response = problems.problem(503, "starting", "the MCP endpoint is starting; retry")
            await response(scope, receive, send)
            return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        try:
            principal = self.authenticator.authenticate(headers)
        except OrcError as exc:
            await problems.problem_for(exc)(scope, receive, send)
            return
        state = dict(scope.get("state") or {})
        state["principal"] = principal
        rest = scope["path"][len(MCP_PATH) :] or "/"
        await self.target(
            {**scope, "state": state, "path": rest, "root_path": scope.get("root_path", "") + MCP_PATH},
            receive,
            send,
        )


class Dispatcher:
    """Routes ``/api/mcp`` to the MCP endpoint and everything else to FastAPI (lifespan included)."""

    def __init__(self, api: ASGIApp, mcp: McpEndpoint) -> None:
        self.api = api
        self.mcp = mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path == MCP_PATH or path.startswith(MCP_PATH + "/")):
            await self.mcp(scope, receive, send)
        else:
            await self.api(scope, receive, send)


def stream_bounds(settings: Settings) -> StreamBounds:
    """The open-stream limits of ``settings`` (``ORC_MAX_STREAMS*``, ``ORC_STREAM_*_SECONDS``)."""
    return StreamBounds(
        per_principal=settings.max_streams_per_principal,
        total=settings.max_streams,
        idle_seconds=settings.stream_idle_seconds,
        max_seconds=settings.stream_max_seconds,
    )


def create_app(
    settings: Settings | None = None,
    *,
    model: BaseChatModel | None = None,
    stores: Stores | None = None,
    digest_model: BaseChatModel | None = None,
    admission: Admission | None = None,
) -> ASGIApp:
    """The ASGI app for ``settings`` (default: the environment). Nothing is built until its lifespan starts.

    ``model``, ``digest_model``, ``stores`` and ``admission`` replace the configured ones (tests and
    embedders).
    """
    settings = settings or Settings()
    settings.check()
    log_safety.install(log_safety.configured_secrets(settings))
    authenticator = authenticator_for(settings)
    mcp = McpEndpoint(authenticator)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with build_runtime(
            settings, model=model, stores=stores, digest_model=digest_model, admission=admission
        ) as services:
            mcp_app, mcp_lifespan = build_mcp_http_app(
                services.published_mcp_server, allowed_hosts=settings.mcp_allowed_hosts
            )
            async with mcp_lifespan():
                app.state.services = services
                mcp.target = mcp_app
                services.warm()
                try:
                    yield
                finally:
                    mcp.target = None
                    app.state.services = None

    api = fastapi_app(settings, authenticator, lifespan)
    return guarded_app(api, mcp, settings, authenticator)


def fastapi_app(
    settings: Settings, authenticator: Authenticator, lifespan: Callable[[FastAPI], AbstractAsyncContextManager[None]]
) -> FastAPI:
    """The FastAPI app: every route under ``/api`` (health and the OpenAPI document included), the page, and the
    problem responses."""
    api = FastAPI(
        title="orc",
        version=__version__,
        summary="Document-chat agent orchestrator: grounded, cited answers about your documents.",
        lifespan=lifespan,
        # /api/docs is served by orc.http.page from local assets (FastAPI's default loads Swagger UI from a CDN).
        docs_url=None,
        redoc_url=None,
        # Served below, so that only an authenticated caller reads orc's version in it.
        openapi_url=None,
    )
    add_event_schemas(api)
    api.state.authenticator = authenticator
    problems.install(api)
    api.include_router(routes_orc.router, prefix="/api", tags=["chat"])
    api.include_router(routes_sessions.router, prefix="/api", tags=["sessions"])
    api.include_router(routes_handoff.router, prefix="/api", tags=["context requests"])
    api.include_router(routes_handoff_events.router, prefix="/api", tags=["context requests"])
    api.include_router(routes_context.router, prefix="/api", tags=["context files"])
    api.include_router(routes_contexts.router, prefix="/api", tags=["contexts"])
    api.include_router(routes_documents.router, prefix="/api", tags=["documents"])
    page.install(api, settings)
    # Innermost: a 500 is answered where it happens, so the connection stays open (see UnexpectedErrors).
    api.add_middleware(problems.UnexpectedErrors)
    api.add_middleware(page.PageSecurityHeaders)

    @api.get("/api/health", tags=["health"], summary="Liveness; configured backends for an authenticated caller")
    async def health(request: Request) -> dict[str, Any]:
        """Liveness for anyone (``{"status": "ok"}``); version and configured backends (never their addresses)
        only for an authenticated caller: an anonymous prober learns nothing about the deployment."""
        services: Services | None = getattr(request.app.state, "services", None)
        status = "ok" if services is not None else "starting"
        try:
            authenticator.authenticate(request.headers)
        except OrcError:
            return {"status": status}
        return {
            "status": status,
            "version": __version__,
            "storage": settings.storage,
            "model": services.documents.model_label if services is not None else None,
            "auth": settings.auth,
            "mcp": MCP_PATH,
        }

    @api.get(OPENAPI_PATH, include_in_schema=False)
    async def openapi_document(request: Request) -> JSONResponse:
        document = api.openapi()
        try:
            authenticator.authenticate(request.headers)
        except OrcError:
            document = {**document, "info": {**document["info"], "version": "unpublished"}}
        return JSONResponse(document)

    return api


def guarded_app(api: FastAPI, mcp: McpEndpoint, settings: Settings, authenticator: Authenticator) -> ASGIApp:
    """``api`` and the MCP endpoint behind the guards every request passes (each reads the route table), and the
    output policy every response leaves through."""
    table = RouteTable()
    require_classified(api, MCP_PATH, table)  # a route without a class would skip the guards below

    def running_policy() -> Admission | None:
        services: Services | None = getattr(api.state, "services", None)
        # Nothing to refuse early when nothing is limited (and no reason to authenticate twice).
        limits = services.documents.admission if services is not None else UNLIMITED
        return limits if limits is not UNLIMITED else None

    # Every guard reads the route table; outermost first: body deadline, body size, the cross-site check, the
    # stream limits, the early refusal of turns.
    guarded: ASGIApp = EarlyRefusal(Dispatcher(api, mcp), authenticator, running_policy, table)
    guarded = StreamLimits(guarded, authenticator, stream_bounds(settings), table)
    if settings.auth == "easyauth":
        # The only cookie-borne credential: other modes' credentials are headers a forged request cannot carry.
        guarded = CsrfGuard(guarded, table)
    body_limits: dict[BodyKind, int] = {
        "none": 0,
        "json": settings.max_request_bytes,
        "files": settings.max_upload_bytes + _MULTIPART_OVERHEAD,
    }
    served = NoSniffing(BodyDeadline(BodySizeLimit(guarded, table, body_limits), authenticator))

    def output_policy() -> OutputPolicy:
        services: Services | None = getattr(api.state, "services", None)
        return services.foundation.output_policy if services is not None else OutputPolicy()

    # Every response, whoever answers it, leaves through the output policy.
    door = OutputDoor(served, output_policy, server_documents=[OPENAPI_PATH])
    # A principal header nobody vouches for must not be trusted anywhere: refuse everything, say why in the log.
    return RefuseEveryRequest(door) if settings.easyauth_unprotected else door
