"""The page's headers and configuration, the offline docs, and CSRF protection under cookie sign-in."""

from __future__ import annotations

import base64
import json
import re

import httpx
import pytest

from orc.http.csrf import CsrfGuard
from orc.http.page import WEB_ROOT
from orc.http.route_table import RouteTable
from orc.settings import Settings
from tests.http.conftest import ClientFactory

PAGE_JS_BUDGET = 100 * 1024


def signed_in(tenant: str = "t1", user: str = "u1") -> dict[str, str]:
    """The header App Service sets for a signed-in user (its cookie is what the browser really sends)."""
    claims = [{"typ": "tid", "val": tenant}, {"typ": "oid", "val": user}]
    return {"X-MS-CLIENT-PRINCIPAL": base64.b64encode(json.dumps({"claims": claims}).encode()).decode()}


async def test_the_page_is_served_at_the_root_with_a_strict_content_security_policy(client: httpx.AsyncClient) -> None:
    page = await client.get("/")
    script = await client.get("/web/js/app.js")

    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "script-src 'self';" in policy and "style-src 'self';" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "frame-ancestors 'none'" in policy
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    # No inline script or style in the markup: the policy would block it.
    assert not re.search(r"<script(?![^>]*\bsrc=)", page.text)
    assert " style=" not in page.text and "<style" not in page.text
    # The API keeps its own headers: no page policy on JSON.
    assert "content-security-policy" not in (await client.get("/api/health")).headers


async def test_ui_config_tells_the_page_the_sign_in_mode_and_limits_without_credentials(
    client_factory: ClientFactory,
) -> None:
    settings = Settings(auth="api-key", api_keys={"secret-key": {"organization": "o", "user": "u"}})
    async with client_factory(settings) as http:
        config = await http.get("/api/ui-config")
        me = await http.get("/api/me")
        openapi = (await http.get("/api/openapi.json")).json()

    assert config.status_code == 200
    assert config.json()["auth"] == "api-key" and config.json()["max_upload_bytes"] == settings.max_upload_bytes
    assert "secret-key" not in config.text
    assert me.status_code == 401
    assert "/api/ui-config" in openapi["paths"] and "/api/sessions/{session_id}/sources" in openapi["paths"]


async def test_swagger_ui_is_served_from_local_assets(client: httpx.AsyncClient) -> None:
    docs = await client.get("/api/docs")
    sources = re.findall(r'(?:src|href)="([^"]+)"', docs.text)

    assert docs.status_code == 200
    assert sources and all(source.startswith("/web/") for source in sources), sources
    for source in sources:
        assert (await client.get(source)).status_code == 200, source


def test_the_page_own_javascript_stays_within_its_budget() -> None:
    own = [path for path in (WEB_ROOT / "js").rglob("*.js")]
    size = sum(path.stat().st_size for path in own)

    assert own and size <= PAGE_JS_BUDGET, size


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ({"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8000"}, True),
        ({"Origin": "http://127.0.0.1:8000"}, True),
        ({}, True),  # not a browser: no cookie is sent along by someone else
        ({"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, False),
        ({"Origin": "https://evil.example"}, False),
        ({"Sec-Fetch-Site": "cross-site"}, False),
        ({"Origin": "null"}, False),
    ],
)
async def test_cookie_sign_in_refuses_cross_site_unsafe_requests(
    client_factory: ClientFactory, headers: dict[str, str], allowed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBSITE_AUTH_ENABLED", "True")  # App Service authentication is on
    async with client_factory(Settings(auth="easyauth")) as http:
        response = await http.delete("/api/sessions/nothing-here", headers={**signed_in(), **headers})
        read = await http.get("/api/sessions", headers={**signed_in(), "Sec-Fetch-Site": "cross-site"})

    if allowed:
        assert response.status_code == 404, response.text  # past the guard: the route answers
    else:
        assert response.status_code == 403 and response.json()["code"] == "cross_site_request"
    assert read.status_code == 200  # reads change nothing


async def test_header_credentials_need_no_origin_check(client_factory: ClientFactory) -> None:
    async with client_factory(Settings(auth="none")) as http:
        response = await http.delete(
            "/api/sessions/nothing-here", headers={"Sec-Fetch-Site": "cross-site", "Origin": "https://x.example"}
        )

    assert response.status_code == 404  # the route answered: nothing stopped it


async def test_the_guard_accepts_configured_origins() -> None:
    seen: list[str] = []

    async def app(scope: dict[str, object], receive: object, send: object) -> None:
        seen.append(str(scope["path"]))

    guard = CsrfGuard(app, RouteTable(), allowed_origins=["https://portal.example/"])  # type: ignore[arg-type]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/orc",
        "headers": [(b"host", b"orc.example"), (b"origin", b"https://portal.example")],
    }
    await guard(scope, None, None)  # type: ignore[arg-type]

    assert seen == ["/api/orc"]
