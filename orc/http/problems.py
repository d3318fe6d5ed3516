"""RFC 9457 problem+json responses with a stable ``code``; nothing internal ever reaches the body."""

from __future__ import annotations

import logging
import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orc.errors import (
    IdempotencyKeyInFlight,
    InternalError,
    OrcError,
    PayloadTooLarge,
    ServiceUnavailable,
    TooManyRequests,
    Unauthenticated,
)
from orc.telemetry import record_failure

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
_TITLES = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    412: "Precondition Failed",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
# RFC 9110 §11.6.1: a 401 names the scheme that would be accepted.
WWW_AUTHENTICATE = 'Bearer realm="orc"'

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 401: "unauthenticated", 413: "payload_too_large"}


def problem(
    status: int, code: str, detail: str, *, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    """A problem+json response, counted in the failed (and, for a 429, rate-limited) request metrics."""
    record_failure(code, status=status)
    body = {
        "type": "about:blank",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "code": code,
        "detail": detail,
    }
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def retry_after_seconds(exc: ServiceUnavailable | TooManyRequests) -> int:
    """Whole seconds a client should wait: the dependency's own hint rounded up, or one second."""
    return max(1, math.ceil(exc.retry_after)) if exc.retry_after is not None else 1


def problem_for(exc: OrcError) -> JSONResponse:
    """The response for one of orc's own errors; 401 says how to authenticate, 429, 503 and the in-flight 409 when
    to retry."""
    if isinstance(exc, InternalError):
        return unexpected(exc)
    headers = None
    if isinstance(exc, ServiceUnavailable | TooManyRequests):
        headers = {"Retry-After": str(retry_after_seconds(exc))}
    elif isinstance(exc, IdempotencyKeyInFlight):
        headers = {"Retry-After": "1"}
    elif isinstance(exc, Unauthenticated):
        headers = {"WWW-Authenticate": WWW_AUTHENTICATE}
    if exc.status >= 500 and not isinstance(exc, ServiceUnavailable):
        return problem(exc.status, exc.code, "the request failed on the server; it was not stored")
    if isinstance(exc, PayloadTooLarge) and exc.limit is not None:
        return problem(exc.status, exc.code, exc.message, headers=headers, limit=exc.limit)
    return problem(exc.status, exc.code, exc.message, headers=headers)


def unexpected(exc: Exception) -> JSONResponse:
    """The response for a failure no client can act on (an :class:`~orc.errors.InternalError` is one): nothing
    about it leaves the server but a stable code; its type is logged, its details only at DEBUG."""
    log.warning("request failed: %s", type(exc).__name__)
    log.debug("request failure details", exc_info=exc)
    return problem(500, "internal_error", "the request failed on the server; it was not stored")


class UnexpectedErrors:
    """Answers an exception no handler took with an ordinary 500 problem, and does not re-raise it.

    Starlette sends the ``Exception`` handler's response from its outermost middleware and then re-raises, so the
    server saw every 500 as a crashed request and closed the keep-alive connection. Here the exception ends where
    it is answered. A failure after the response started (a stream) cannot be answered and is re-raised.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception as exc:
            if started:
                raise
            await unexpected(exc)(scope, receive, send)


def install(app: FastAPI) -> None:
    """Register the handlers that turn every failure into problem+json."""

    @app.exception_handler(OrcError)
    async def _orc(_: Request, exc: OrcError) -> JSONResponse:
        return problem_for(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": [str(part) for part in error.get("loc", ())], "msg": str(error.get("msg", ""))}
            for error in exc.errors()
        ]
        if any(error.get("type") == "json_invalid" for error in exc.errors()):
            return problem(400, "malformed_json", "the request body is not valid JSON", errors=errors)
        return problem(422, "validation_error", "the request does not match the schema", errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        return problem(exc.status_code, code, str(exc.detail), headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        return unexpected(exc)
