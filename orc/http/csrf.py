"""Cross-site request forgery protection for cookie sign-in (``ORC_AUTH=easyauth``).

With App Service authentication the browser sends the session cookie with every request to the site, including
requests another site makes it send. So an unsafe request (POST, PUT, PATCH, DELETE) is refused unless the
browser says it comes from this origin: ``Sec-Fetch-Site: same-origin`` (or ``none``, typed by the user), or an
``Origin`` that is this site's own or one of ``allowed_origins``. A request with neither header is not from a
browser page (browsers send ``Origin`` on every cross-origin POST), so it passes. Header-credential modes (none,
api-key) need none of this: a forged request cannot carry the key.

Which routes are checked is the route table's to say (:attr:`~orc.http.route_table.Guards.same_site`): every one
but the MCP endpoint, whose JSON-RPC POSTs need a CORS preflight that no other site gets past.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from orc.http import problems
from orc.http.route_table import RouteTable

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
_SAME_SITE_VALUES = frozenset({"same-origin", "none"})


def _origin(url: str) -> str | None:
    """``scheme://host[:port]`` lower-cased, or ``None`` for ``null`` and malformed values."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if not parts.scheme or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}".lower()


class CsrfGuard:
    """Refuses cross-site unsafe requests with 403 ``cross_site_request`` (install only under cookie auth)."""

    def __init__(self, app: ASGIApp, table: RouteTable, allowed_origins: Iterable[str] = ()) -> None:
        self.app = app
        self.table = table
        self.allowed = {origin for origin in (_origin(value) for value in allowed_origins) if origin}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] in SAFE_METHODS
            or not self.table.route_for(scope).guards.same_site
            or self._same_site(scope)
        ):
            await self.app(scope, receive, send)
            return
        response = problems.problem(
            403, "cross_site_request", "this request came from another site; reload the page and try again"
        )
        await response(scope, receive, send)

    def _same_site(self, scope: Scope) -> bool:
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]}
        fetch_site = headers.get("sec-fetch-site")
        if fetch_site is not None and fetch_site.strip().lower() in _SAME_SITE_VALUES:
            return True
        origin = headers.get("origin")
        if origin is None:
            # No Origin: either not a browser, or a browser whose Sec-Fetch-Site said cross-site (checked above
            # only when it is same-site) — refuse that one, let header-less clients through.
            return fetch_site is None
        found = _origin(origin)
        if found is None:
            return False
        # The Host header only: X-Forwarded-Host is whatever the client wrote (App Service passes the site's own
        # Host through), so trusting it let any page name itself as this site.
        host = headers.get("host", "")
        own = {f"{scheme}://{host}".lower() for scheme in ("https", "http")} if host else set()
        return found in own or found in self.allowed
