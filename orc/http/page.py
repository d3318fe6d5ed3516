"""The chat page at ``/`` with its assets under ``/web``, its configuration at ``/api/ui-config`` and an offline
Swagger UI at ``/api/docs``.

Everything is served from the ``orc/web`` folder shipped in the wheel: no CDN, no build step at run time. Page
responses carry a strict Content-Security-Policy (scripts and styles from this origin only, no inline code), so
even text that got past the page's sanitizer could not run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from fastapi import APIRouter, FastAPI, Request
from pydantic import BaseModel, Field
from starlette.responses import FileResponse
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orc import __version__
from orc.errors import OrcError
from orc.http.dependencies import Caller
from orc.settings import Settings

WEB_ROOT = Path(__file__).resolve().parent.parent / "web"
ASSETS_PATH = "/web"
PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; "
    "connect-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
# Swagger UI sets style attributes from its markup; it runs no inline script (its initializer is a file here).
DOCS_POLICY = PAGE_POLICY.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")
_SECURITY_HEADERS = {
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"no-referrer",
    b"x-frame-options": b"DENY",
}


class UiConfig(BaseModel):
    """What the page needs before signing in: how to authenticate and the request limits. Nothing secret."""

    auth: Literal["none", "api-key", "easyauth"] = Field(
        description="none: no sign-in; api-key: send X-API-Key; easyauth: the App Service sign-in cookie."
    )
    sign_in_url: str | None = Field(description="Where to sign in (easyauth), else null.")
    max_upload_bytes: int
    max_question_chars: int
    max_blob_names: int
    version: str | None = Field(
        default=None, description="orc's version, for a caller that is signed in (null for anyone else)."
    )


class Me(BaseModel):
    """The signed-in principal."""

    organization: str
    user: str


def ui_config(settings: Settings) -> UiConfig:
    """The page configuration for ``settings``."""
    return UiConfig(
        auth=settings.auth,
        sign_in_url="/.auth/login/aad?post_login_redirect_uri=/" if settings.auth == "easyauth" else None,
        max_upload_bytes=settings.max_upload_bytes,
        max_question_chars=settings.max_question_chars,
        max_blob_names=settings.max_blob_names,
    )


def install(api: FastAPI, settings: Settings) -> None:
    """Add the page, its assets, ``/api/ui-config`` and the offline ``/api/docs`` to ``api``."""
    router = APIRouter()
    config = ui_config(settings)

    @router.get("/api/ui-config", response_model=UiConfig, tags=["page"], summary="The chat page's configuration")
    async def get_ui_config(request: Request) -> UiConfig:
        """The sign-in mode and limits the page adapts to. Needs no credentials and reveals no secret; the version
        only to a caller that is signed in (an anonymous prober learns nothing about the deployment)."""
        try:
            request.app.state.authenticator.authenticate(request.headers)
        except OrcError:
            return config
        return config.model_copy(update={"version": __version__})

    @router.get("/api/me", response_model=Me, tags=["page"], summary="Who you are signed in as")
    async def get_me(principal: Caller) -> Me:
        """The caller's organization (the root of the contexts tree the page offers as focus) and user."""
        return Me(organization=principal.organization, user=principal.user)

    @router.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(WEB_ROOT / "index.html", headers={"Cache-Control": "no-cache"})

    @router.get("/api/docs", include_in_schema=False)
    async def docs(request: Request) -> FileResponse:
        return FileResponse(WEB_ROOT / "docs.html", headers={"Cache-Control": "no-cache"})

    api.include_router(router)
    api.mount(ASSETS_PATH, StaticFiles(directory=WEB_ROOT), name="web")


def policy_for(path: str) -> str | None:
    """The Content-Security-Policy of a response to ``path``: the page and its assets, and the docs page."""
    if path == "/api/docs":
        return DOCS_POLICY
    if path == "/" or path.startswith(ASSETS_PATH + "/"):
        return PAGE_POLICY
    return None


class PageSecurityHeaders:
    """Adds the Content-Security-Policy and the usual hardening headers to page responses (not to the API)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        policy = policy_for(scope.get("path", "")) if scope["type"] == "http" else None
        if policy is None:
            await self.app(scope, receive, send)
            return
        extra = [(b"content-security-policy", policy.encode()), *_SECURITY_HEADERS.items()]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
