"""Settings fail fast naming the variable; authenticators take identity only from credentials."""

from __future__ import annotations

import base64
import json

import pytest
from pydantic import ValidationError

from orc.errors import ConfigurationError, Unauthenticated
from orc.http.auth import ApiKeyAuth, EasyAuth, NoAuth, authenticator_for
from orc.principal import LOCAL_PRINCIPAL, Principal
from orc.settings import ApiKeyPrincipal, Settings


def test_missing_production_settings_fail_fast_naming_the_variable() -> None:
    with pytest.raises(ConfigurationError, match="ORC_COSMOS_ENDPOINT"):
        Settings(storage="azure", blob_container="x").check()
    with pytest.raises(ConfigurationError, match="ORC_BLOB_CONNECTION_STRING or ORC_BLOB_ACCOUNT_URL"):
        Settings(storage="azure", cosmos_endpoint="https://example.documents.azure.com").check()
    with pytest.raises(ConfigurationError, match="ORC_API_KEYS"):
        Settings(auth="api-key").check()


def test_settings_come_from_orc_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORC_STORAGE", "azure")
    monkeypatch.setenv("ORC_COSMOS_ENDPOINT", "https://acct.documents.azure.com")
    monkeypatch.setenv("ORC_BLOB_ACCOUNT_URL", "https://acct.blob.core.windows.net")
    monkeypatch.setenv("ORC_API_KEYS", '{"k1": {"organization": "contoso", "user": "alice"}}')
    monkeypatch.setenv("ORC_MCP_ALLOWED_HOSTS", "orc.example.com, orc.example.com:*")

    settings = Settings()
    settings.check()

    assert settings.storage == "azure" and settings.cosmos_key is None  # no key: Entra ID
    assert settings.api_keys == {"k1": ApiKeyPrincipal(organization="contoso", user="alice")}
    assert settings.mcp_allowed_hosts == ["orc.example.com", "orc.example.com:*"]


def test_secrets_never_show_in_the_settings_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORC_COSMOS_KEY", "super-secret-key")
    monkeypatch.setenv("ORC_BLOB_CONNECTION_STRING", "AccountKey=also-secret")

    assert "super-secret-key" not in repr(Settings())
    assert "also-secret" not in repr(Settings())


def easyauth_header(**claims: str) -> str:
    principal = {"auth_typ": "aad", "claims": [{"typ": typ, "val": val} for typ, val in claims.items()]}
    return base64.b64encode(json.dumps(principal).encode()).decode()


def test_easyauth_takes_the_tenant_and_object_ids_from_the_platform_header() -> None:
    header = easyauth_header(
        **{
            "http://schemas.microsoft.com/identity/claims/tenantid": "tenant-1",
            "http://schemas.microsoft.com/identity/claims/objectidentifier": "object-9",
        }
    )

    principal = EasyAuth().authenticate({"x-ms-client-principal": header})

    assert principal == Principal(organization="tenant-1", user="object-9")


@pytest.mark.parametrize(
    "header", [None, "not base64!", base64.b64encode(b"{}").decode(), easyauth_header(tid="../x", oid="y")]
)
def test_easyauth_refuses_a_missing_or_malformed_principal(header: str | None) -> None:
    headers = {} if header is None else {"x-ms-client-principal": header}
    with pytest.raises(Unauthenticated):
        EasyAuth().authenticate(headers)


def test_the_platform_header_is_ignored_unless_easyauth_is_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBSITE_AUTH_ENABLED", "True")  # App Service authentication is on
    forged = {"x-ms-client-principal": easyauth_header(tid="victim-tenant", oid="victim")}

    assert authenticator_for(Settings()).authenticate(forged) == LOCAL_PRINCIPAL
    keys = ApiKeyAuth({"k": Principal(organization="o", user="u")})
    with pytest.raises(Unauthenticated):
        keys.authenticate(forged)
    assert isinstance(authenticator_for(Settings(auth="easyauth")), EasyAuth)
    assert isinstance(authenticator_for(Settings()), NoAuth)


@pytest.mark.parametrize("field", ["api_keys", "models"])
def test_a_json_object_setting_that_is_not_json_is_refused_naming_its_variable(field: str) -> None:
    with pytest.raises(ValidationError, match=f"ORC_{field.upper()} must be a JSON object"):
        Settings(**{field: "{not json"})
