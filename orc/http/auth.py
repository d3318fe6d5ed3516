"""Authenticators: who the caller is comes from credentials, never from the request body."""

from __future__ import annotations

import base64
import binascii
import hmac
import json
from collections.abc import Mapping
from typing import Protocol

from pydantic import ValidationError

from orc.errors import Unauthenticated
from orc.principal import LOCAL_PRINCIPAL, Principal
from orc.settings import Settings


class Authenticator(Protocol):
    """Maps request headers (lower-case names) to a principal or raises :class:`Unauthenticated`."""

    def authenticate(self, headers: Mapping[str, str]) -> Principal: ...


class NoAuth:
    """The embedded default: one local principal (organization ``default``, user ``default``, an ``admin``)."""

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """Everyone is the local principal."""
        return LOCAL_PRINCIPAL


class ApiKeyAuth:
    """``X-API-Key: <key>`` or ``Authorization: Bearer <key>``; each key maps to an organization and user."""

    def __init__(self, keys: Mapping[str, Principal]) -> None:
        self._keys = dict(keys)

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """Constant-time comparison against every configured key."""
        presented = headers.get("x-api-key")
        authorization = headers.get("authorization", "")
        if presented is None and authorization.lower().startswith("bearer "):
            presented = authorization[7:].strip()
        if presented:
            for key, principal in self._keys.items():
                if hmac.compare_digest(key.encode(), presented.encode()):
                    return principal
        raise Unauthenticated("a valid API key is required (X-API-Key header or Authorization: Bearer)")


class EasyAuth:
    """Azure App Service authentication: the platform-set ``X-MS-CLIENT-PRINCIPAL`` header.

    Trusted only when ``ORC_AUTH=easyauth``: App Service strips the header from client requests, so it can only
    come from the platform. The organization is the Entra tenant id claim, the user the object id claim.
    """

    _TENANT = "http://schemas.microsoft.com/identity/claims/tenantid"
    _OBJECT_ID = "http://schemas.microsoft.com/identity/claims/objectidentifier"
    # App roles arrive as one claim per role, under the short or the long claim type.
    _ROLE_TYPES = ("roles", "http://schemas.microsoft.com/ws/2008/06/identity/claims/role")
    _ADMIN_ROLES = ("admin", "orc.admin")

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """Decode the base64 JSON principal and take tenant and object ids from its claims."""
        encoded = headers.get("x-ms-client-principal")
        if not encoded:
            raise Unauthenticated("sign-in required")
        try:
            data = json.loads(base64.b64decode(encoded, validate=True))
            if not isinstance(data, dict) or not isinstance(data.get("claims", []), list):
                raise TypeError("the client principal is not an object with a list of claims")
            pairs = [(claim["typ"], claim["val"]) for claim in data.get("claims", [])]
            claims = dict(pairs)
            roles = {str(value).lower() for kind, value in pairs if kind in self._ROLE_TYPES}
            return Principal(
                organization=claims.get(self._TENANT) or claims["tid"],
                user=claims.get(self._OBJECT_ID) or claims["oid"],
                role="admin" if roles.intersection(self._ADMIN_ROLES) else "member",
            )
        except (binascii.Error, ValueError, KeyError, TypeError, AttributeError, ValidationError) as exc:
            raise Unauthenticated("the client principal header is not valid") from exc


def authenticator_for(settings: Settings) -> Authenticator:
    """The authenticator ``ORC_AUTH`` selects."""
    if settings.auth == "api-key":
        return ApiKeyAuth(
            {
                key: Principal(organization=p.organization, user=p.user, role=p.role)
                for key, p in settings.api_keys.items()
            }
        )
    if settings.auth == "easyauth":
        return EasyAuth()
    return NoAuth()
