"""Easy Auth headers are trusted only where App Service says its authentication is on (WEBSITE_AUTH_ENABLED):
elsewhere a forged X-MS-CLIENT-PRINCIPAL gets nobody in, every request is refused with a coded 503, and the
start-up log says why."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from orc.settings import Settings
from tests.adversarial.test_auth_and_identity import easyauth_user
from tests.http.conftest import open_client


@pytest.fixture
def platform_auth_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WEBSITE_AUTH_ENABLED", raising=False)


@pytest.mark.usefixtures("platform_auth_unset")
@pytest.mark.parametrize("path", ["/api/sessions", "/api/health", "/", "/web/app.css", "/api/ui-config"])
async def test_a_forged_client_principal_is_refused_where_the_platform_auth_is_off(path: str) -> None:
    async with open_client(Settings(auth="easyauth")) as client:
        response = await client.get(path, headers=easyauth_user("victim", "admin"))

    assert response.status_code == 503
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "easyauth_not_enabled"
    assert "victim" not in response.text


@pytest.mark.usefixtures("platform_auth_unset")
async def test_mcp_and_turns_are_refused_too() -> None:
    async with open_client(Settings(auth="easyauth")) as client:
        turn = await client.post("/api/orc", json={"question": "hi"}, headers=easyauth_user("victim"))
        mcp = await client.post("/api/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})

    assert [turn.status_code, mcp.status_code] == [503, 503]
    assert turn.json()["code"] == mcp.json()["code"] == "easyauth_not_enabled"


@pytest.mark.usefixtures("platform_auth_unset")
async def test_start_up_says_why_every_request_is_refused(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR):
        async with open_client(Settings(auth="easyauth")):
            pass

    (line,) = [r.getMessage() for r in caplog.records if "WEBSITE_AUTH_ENABLED" in r.getMessage()]
    assert "ORC_AUTH=easyauth" in line and "authsettingsV2" in line and "503 easyauth_not_enabled" in line


async def test_the_platform_principal_is_trusted_where_app_service_authentication_is_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEBSITE_AUTH_ENABLED", "True")  # as App Service sets it
    async with open_client(Settings(auth="easyauth")) as client:
        signed_in = await client.get("/api/me", headers=easyauth_user("ada"))
        anonymous = await client.get("/api/sessions")

    assert signed_in.status_code == 200 and signed_in.json() == {"organization": "acme", "user": "ada"}
    assert anonymous.status_code == 401


def test_the_template_turns_app_service_authentication_on_whenever_it_deploys_easyauth() -> None:
    bicep = (Path(__file__).resolve().parents[2] / "infra" / "main.bicep").read_text(encoding="utf-8")
    match = re.search(
        r"^resource \w+ 'Microsoft.Web/sites/config@[^']+' = if \(orcAuth == 'easyauth'\) \{(.*?)^\}",
        bicep,
        re.S | re.M,
    )
    assert match, "no authsettingsV2 resource conditioned on orcAuth == 'easyauth'"
    auth = match.group(1)

    assert "name: 'authsettingsV2'" in auth
    assert "platform: { enabled: true }" in auth
    assert "requireAuthentication: true" in auth
    assert "unauthenticatedClientAction: authUnauthenticatedAction" in auth
    assert re.search(r"azureActiveDirectory: \{\s*enabled: true", auth)
    assert "clientId: signInClientId" in auth
    assert re.search(r"^param authClientId string", bicep, re.M)
    assert re.search(r"\{ name: 'ORC_AUTH', value: orcAuth \}", bicep)
