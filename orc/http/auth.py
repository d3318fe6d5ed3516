"""Authenticators: who the caller is comes from credentials, never from the request body."""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import logging
from collections.abc import Mapping
from typing import Protocol

from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from orc.errors import EasyAuthNotEnabled, Unauthenticated
from orc.http.problems import problem_for
from orc.principal import LOCAL_PRINCIPAL, Principal
from orc.settings import EASYAUTH_OFF, Settings

logger = logging.getLogger(__name__)


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

    Trusted only where App Service authentication is on (the platform sets ``WEBSITE_AUTH_ENABLED=True``): there
    it rejects unauthenticated requests and strips client-sent ``X-MS-*`` headers, so the header can only come from
    the platform. The organization is the Entra tenant id claim, the user the object id claim.
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


class EasyAuthOff:
    """``ORC_AUTH=easyauth`` where the platform's authentication is off: nobody is authenticated, ever."""

    @staticmethod
    def refusal() -> EasyAuthNotEnabled:
        """What every request is told."""
        return EasyAuthNotEnabled(
            "sign-in is unavailable: App Service authentication is not enabled for this app; the operator must turn "
            "it on"
        )

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """Refuse, whatever the headers say (they may be a client's forgery)."""
        raise self.refusal()


class RefuseEveryRequest:
    """Answers every HTTP request (the page, health and MCP included) with 503 ``easyauth_not_enabled``; the
    lifespan still runs, so the process starts and its log says why."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await problem_for(EasyAuthOff.refusal())(scope, receive, send)


def authenticator_for(settings: Settings) -> Authenticator:
    """The authenticator ``ORC_AUTH`` selects (for easyauth, only where the platform's authentication is on)."""
    if settings.auth == "api-key":
        return ApiKeyAuth(
            {
                key: Principal(organization=p.organization, user=p.user, role=p.role)
                for key, p in settings.api_keys.items()
            }
        )
    if settings.easyauth_unprotected:
        logger.error("%s", EASYAUTH_OFF)
        return EasyAuthOff()
    if settings.auth == "easyauth":
        return EasyAuth()
    return NoAuth()
