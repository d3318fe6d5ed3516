"""Identity and roles under attack: malformed Easy Auth principals, 401s that say how to authenticate, cross-site
forms under cookie sign-in, anonymous health probes, and members changing what only admins or owners may."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from orc.settings import Settings
from tests.http.conftest import open_client

TENANT = "http://schemas.microsoft.com/identity/claims/tenantid"
OBJECT_ID = "http://schemas.microsoft.com/identity/claims/objectidentifier"
ROLE = "http://schemas.microsoft.com/ws/2008/06/identity/claims/role"
KEYS = {
    "key-admin": {"organization": "acme", "user": "ada", "role": "admin"},
    "key-bob": {"organization": "acme", "user": "bob"},
    "key-carol": {"organization": "acme", "user": "carol", "role": "member"},
}


def encoded(value: Any) -> dict[str, str]:
    return {"X-MS-CLIENT-PRINCIPAL": base64.b64encode(json.dumps(value).encode()).decode()}


def easyauth_user(user: str, *roles: str) -> dict[str, str]:
    claims = [{"typ": TENANT, "val": "acme"}, {"typ": OBJECT_ID, "val": user}]
    return encoded({"claims": claims + [{"typ": ROLE, "val": role} for role in roles]})


def as_key(key: str) -> dict[str, str]:
    return {"X-API-Key": key}


def api_keys() -> Settings:
    return Settings(auth="api-key", api_keys=json.dumps(KEYS))


@pytest.mark.parametrize(
    "principal",
    [["claims"], "a string", 42, None, {"claims": "not a list"}, {"claims": [["typ", "val"]]}, {"claims": [1]}],
)
async def test_an_easy_auth_principal_that_is_not_an_object_of_claims_is_401_not_500(
    principal: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEBSITE_AUTH_ENABLED", "True")  # App Service authentication is on
    async with open_client(Settings(auth="easyauth")) as client:
        response = await client.get("/api/sessions", headers=encoded(principal))

    assert response.status_code == 401, response.text
    assert response.json()["code"] == "unauthenticated"


async def test_a_401_says_how_to_authenticate() -> None:
    async with open_client(api_keys()) as client:
        missing = await client.get("/api/sessions")
        wrong = await client.post("/api/orc", json={"question": "hi"}, headers=as_key("nope"))

    for response in (missing, wrong):
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")


async def test_a_cross_site_multipart_post_with_a_foreign_origin_is_refused_and_nothing_is_stored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEBSITE_AUTH_ENABLED", "True")  # App Service authentication is on
    forged = {**easyauth_user("victim"), "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
    files = [("files", ("notes.md", b"# planted", "text/markdown"))]
    async with open_client(Settings(auth="easyauth")) as client:
        refused = await client.post("/api/sessions/s1/context/files", files=files, headers=forged)
        foreign_origin_only = await client.post(
            "/api/sessions/s1/context/files", files=files, headers={**easyauth_user("victim"), "Origin": "null"}
        )
        listed = await client.get("/api/sessions/s1/context", headers=easyauth_user("victim"))

    assert refused.status_code == 403 and refused.json()["code"] == "cross_site_request"
    assert foreign_origin_only.status_code == 403
    assert listed.status_code in (200, 404)
    assert "notes.md" not in listed.text


async def test_an_anonymous_health_probe_learns_only_that_the_service_is_up() -> None:
    async with open_client(api_keys()) as client:
        anonymous = await client.get("/api/health")
        signed_in = await client.get("/api/health", headers=as_key("key-bob"))

    assert anonymous.status_code == 200 and anonymous.json() == {"status": "ok"}
    assert signed_in.json()["status"] == "ok" and "storage" in signed_in.json()


async def upload(client: httpx.AsyncClient, name: str, key: str) -> httpx.Response:
    parts = [("files", (name, b"# Terms\n\nRent is due on the first.", "text/markdown"))]
    return await client.post("/api/contexts/organization/acme/documents", files=parts, headers=as_key(key))


async def test_a_member_cannot_rename_the_organization_an_admin_can() -> None:
    async with open_client(api_keys()) as client:
        created = await client.put(
            "/api/contexts/organization/acme", json={"name": "Acme"}, headers=as_key("key-admin")
        )
        renamed_by_member = await client.put(
            "/api/contexts/organization/acme", json={"name": "Pwned"}, headers=as_key("key-bob")
        )
        renamed_by_admin = await client.put(
            "/api/contexts/organization/acme", json={"name": "Acme Inc."}, headers=as_key("key-admin")
        )
        after = await client.get("/api/contexts/organization/acme", headers=as_key("key-bob"))

    assert created.status_code == 201
    assert renamed_by_member.status_code == 403 and renamed_by_member.json()["code"] == "forbidden_role"
    assert renamed_by_admin.status_code == 200
    assert after.json()["name"] == "Acme Inc."


async def test_a_member_may_remove_its_own_document_but_not_another_members_an_admin_may_remove_any() -> None:
    async with open_client(api_keys()) as client:
        await client.put("/api/contexts/organization/acme", json={"name": "Acme"}, headers=as_key("key-admin"))
        bobs = (await upload(client, "bob.md", "key-bob")).json()["documents"][0]["document_id"]
        carols = (await upload(client, "carol.md", "key-carol")).json()["documents"][0]["document_id"]
        path = "/api/contexts/organization/acme/documents/"

        by_other_member = await client.delete(path + bobs, headers=as_key("key-carol"))
        replaced_by_other_member = await upload(client, "bob.md", "key-carol")
        by_owner = await client.delete(path + carols, headers=as_key("key-carol"))
        by_admin = await client.delete(path + bobs, headers=as_key("key-admin"))
        left = (await client.get("/api/contexts/organization/acme/documents", headers=as_key("key-bob"))).json()

    assert by_other_member.status_code == 403 and by_other_member.json()["code"] == "forbidden_role"
    assert replaced_by_other_member.status_code == 403
    assert by_owner.status_code == 204
    assert by_admin.status_code == 204
    assert left["documents"] == []


async def test_easy_auth_role_claims_make_an_admin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBSITE_AUTH_ENABLED", "True")  # App Service authentication is on
    async with open_client(Settings(auth="easyauth")) as client:
        created = await client.put(
            "/api/contexts/organization/acme", json={"name": "Acme"}, headers=easyauth_user("ada", "admin")
        )
        by_member = await client.put(
            "/api/contexts/organization/acme", json={"name": "Pwned"}, headers=easyauth_user("bob")
        )
        by_admin = await client.put(
            "/api/contexts/organization/acme", json={"name": "Acme Inc."}, headers=easyauth_user("ada", "Admin")
        )

    assert created.status_code == 201
    assert by_member.status_code == 403 and by_member.json()["code"] == "forbidden_role"
    assert by_admin.status_code == 200
