"""orc's exception tree, split by who must react.

- :class:`CallerError` — the caller sent something wrong; carries an HTTP status and a stable ``code``.
- :class:`ServiceUnavailable` — a dependency (storage, model, MCP) failed; the caller may retry later.
- :class:`ConfigurationError` — the deployment is misconfigured; the operator must act.
- :class:`ModelBehaviourError` — the model produced something unusable (after any retries).

Messages are written for the person who must react and never contain storage URLs, secrets or stack traces.
"""

from __future__ import annotations

from typing import ClassVar


class OrcError(Exception):
    """Base of every error orc raises on purpose."""

    code: ClassVar[str] = "internal_error"
    status: ClassVar[int] = 500

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code  # type: ignore[misc]


class ConfigurationError(OrcError):
    """A required setting is missing or inconsistent."""

    code = "configuration_error"
    status = 500


class CallerError(OrcError):
    """The request is wrong; the caller must change it."""

    code = "bad_request"
    status = 400


class InvalidInput(CallerError):
    """A field failed validation (a malformed blob name, an empty question...)."""

    code = "invalid_input"
    status = 400


class InvalidName(InvalidInput):
    """A blob or file name that could escape its folder or is not a plain file name."""

    code = "invalid_name"


class PayloadTooLarge(CallerError):
    """A question, upload or body over its configured limit."""

    code = "payload_too_large"
    status = 413


class UnsupportedMediaType(CallerError):
    """A file type orc cannot extract text from."""

    code = "unsupported_media_type"
    status = 415


class NotFound(CallerError):
    """The thing does not exist for this principal (also used for other principals' things: never 403)."""

    code = "not_found"
    status = 404


class Unauthenticated(CallerError):
    """No or wrong credentials."""

    code = "unauthenticated"
    status = 401


class Conflict(CallerError):
    """The request conflicts with the current state (e.g. the same idempotency key is in flight)."""

    code = "conflict"
    status = 409


class PreconditionFailed(CallerError):
    """An ``If-Match`` revision or ETag no longer matches."""

    code = "precondition_failed"
    status = 412


class NotReady(CallerError):
    """The document exists but is still being processed."""

    code = "not_ready"
    status = 409


class ServiceUnavailable(OrcError):
    """A dependency failed or is overloaded; retrying later may succeed."""

    code = "service_unavailable"
    status = 503

    def __init__(self, message: str, *, code: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after


class ModelBehaviourError(OrcError):
    """The model's output could not be used, even after a retry."""

    code = "model_error"
    status = 502


class ModelRequestsForbidden(OrcError):
    """A real model request was attempted while they are forbidden (tests)."""

    code = "model_requests_forbidden"
    status = 500
