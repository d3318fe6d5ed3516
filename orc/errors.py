"""orc's exception tree — every error the product raises on purpose — split by who must react.

- :class:`CallerError` — the caller sent something wrong; carries an HTTP status and a stable ``code``.
- :class:`ServiceUnavailable` — a dependency (storage, model, MCP) failed; the caller may retry later.
- :class:`ConfigurationError` — the deployment is misconfigured; the operator must act.
- :class:`ModelBehaviourError` — the model produced something unusable (after any retries).
- :class:`InternalError` — an outcome orc's own code must handle (a storage port's conditional write lost, a
  test double ran out of script). One that reaches a client is a bug and is reported like any unexpected
  failure: ``internal_error`` with a generic message, never the class's own ``code`` or message.

::

    OrcError
    ├── CallerError                      400 bad_request
    │   ├── InvalidInput                 400 invalid_input
    │   │   ├── InvalidName              400 invalid_name
    │   │   ├── UnknownContextType       400 unknown_context_type
    │   │   └── ExtractionError          422 extraction_failed
    │   ├── InvalidParent                422 invalid_parent
    │   ├── PayloadTooLarge              413 payload_too_large
    │   │   └── ContextTooLong           413 context_too_long
    │   ├── UnsupportedMediaType         415 unsupported_media_type
    │   ├── NotFound                     404 not_found
    │   │   └── NoSummary                404 no_summary
    │   ├── Unauthenticated              401 unauthenticated
    │   ├── Forbidden                    403 forbidden_role
    │   ├── TooManyRequests              429 too_many_requests
    │   │   ├── RateLimited              429 rate_limited
    │   │   ├── TokenQuotaExceeded       429 token_quota_exceeded
    │   │   ├── TooManyConcurrentTurns   429 too_many_concurrent_turns
    │   │   └── TooManyStreams           429 too_many_streams
    │   ├── Conflict                     409 conflict
    │   │   └── IdempotencyKeyInFlight   409 idempotency_key_in_flight
    │   ├── PreconditionFailed           412 precondition_failed
    │   ├── NotReady                     409 not_ready
    │   ├── DigestFailed                 409 digest_failed
    │   └── IdempotencyKeyReused         422 idempotency_key_reused
    ├── ServiceUnavailable               503 service_unavailable
    │   ├── StorageUnavailable           503 storage_unavailable
    │   ├── ModelUnavailable             503 model_unavailable
    │   ├── EasyAuthNotEnabled           503 easyauth_not_enabled
    │   └── ModelTimeout                 504 model_timeout
    ├── ConfigurationError               500 configuration_error
    │   ├── LifespanFailed               500 startup_failed
    │   ├── PromptFileError              500 prompt_file_invalid
    │   └── ModelMisconfigured           502 model_misconfigured
    ├── ModelBehaviourError              502 model_error
    ├── ModelRequestsForbidden           500 model_requests_forbidden
    └── InternalError                    500 internal_error
        ├── StorageError                 500 storage_error
        │   ├── ItemNotFound             500 item_not_found
        │   ├── ItemAlreadyExists        500 item_already_exists
        │   └── ETagMismatch             500 etag_mismatch
        └── ScriptExhausted              500 script_exhausted (also an AssertionError)

Messages are written for the person who must react and never contain storage URLs, secrets or stack traces.
``tests/test_errors.py`` checks that every exception class defined in ``orc`` or ``mcp_server`` is defined here.
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


# -- the caller must react ----------------------------------------------------------------------------------------


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


class UnknownContextType(InvalidInput):
    """A context type that is not organization, folder or usecase."""

    code = "unknown_context_type"


class ExtractionError(InvalidInput):
    """The file has a supported type but no usable text: corrupt, encrypted, not text, or empty."""

    code = "extraction_failed"
    status = 422


class InvalidParent(CallerError):
    """The parent named for a context has the wrong type or would make a cycle."""

    code = "invalid_parent"
    status = 422


class PayloadTooLarge(CallerError):
    """A question, upload or body over its configured limit (``limit``, when given, is sent with the problem)."""

    code = "payload_too_large"
    status = 413

    def __init__(self, message: str, *, code: str | None = None, limit: int | None = None) -> None:
        super().__init__(message, code=code)
        self.limit = limit


class ContextTooLong(PayloadTooLarge):
    """The model refused the turn's prompt as longer than its context window."""

    code = "context_too_long"


class UnsupportedMediaType(CallerError):
    """A file type orc cannot extract text from."""

    code = "unsupported_media_type"
    status = 415


class NotFound(CallerError):
    """The thing does not exist for this principal (also used for other principals' things: never 403)."""

    code = "not_found"
    status = 404


class NoSummary(NotFound):
    """The document is ready but has no summary (digest) yet."""

    code = "no_summary"


class Unauthenticated(CallerError):
    """No or wrong credentials."""

    code = "unauthenticated"
    status = 401


class Forbidden(CallerError):
    """The caller is known but its role does not allow this (e.g. a member changing another member's document)."""

    code = "forbidden_role"
    status = 403


class TooManyRequests(CallerError):
    """The caller is over one of its limits; ``retry_after`` says when it may try again (seconds)."""

    code = "too_many_requests"
    status = 429

    def __init__(self, message: str, *, code: str | None = None, retry_after: float = 1.0) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after


class RateLimited(TooManyRequests):
    """More requests in the current window than ``ORC_RATE_LIMIT`` allows."""

    code = "rate_limited"


class TokenQuotaExceeded(TooManyRequests):
    """The caller's model tokens today reached ``ORC_TOKEN_QUOTA_DAILY``."""

    code = "token_quota_exceeded"


class TooManyConcurrentTurns(TooManyRequests):
    """The caller already runs ``ORC_MAX_CONCURRENT_TURNS`` turns in this process."""

    code = "too_many_concurrent_turns"


class TooManyStreams(TooManyRequests):
    """The caller (or the process) already holds as many open streams as allowed."""

    code = "too_many_streams"


class Conflict(CallerError):
    """The request conflicts with the current state (e.g. the same idempotency key is in flight)."""

    code = "conflict"
    status = 409


class IdempotencyKeyInFlight(Conflict):
    """A request with this ``Idempotency-Key`` is still being processed."""

    code = "idempotency_key_in_flight"


class PreconditionFailed(CallerError):
    """An ``If-Match`` revision or ETag no longer matches."""

    code = "precondition_failed"
    status = 412


class NotReady(CallerError):
    """The document exists but is still being processed."""

    code = "not_ready"
    status = 409


class DigestFailed(CallerError):
    """The digest could not be made (the reason says why); a change to the file or a retry may fix it."""

    code = "digest_failed"
    status = 409


class IdempotencyKeyReused(CallerError):
    """The ``Idempotency-Key`` was used before with a different request."""

    code = "idempotency_key_reused"
    status = 422


# -- a dependency failed: retry later --------------------------------------------------------------------------------


class ServiceUnavailable(OrcError):
    """A dependency failed or is overloaded; retrying later may succeed."""

    code = "service_unavailable"
    status = 503

    def __init__(self, message: str, *, code: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after


class StorageUnavailable(ServiceUnavailable):
    """The storage backend is unreachable, throttling beyond the retry budget, or failing; retry later."""

    code = "storage_unavailable"


class ModelUnavailable(ServiceUnavailable):
    """The model provider throttled (429), failed (5xx) or could not be reached; retry later."""

    code = "model_unavailable"


class EasyAuthNotEnabled(ServiceUnavailable):
    """``ORC_AUTH=easyauth`` where App Service authentication is off (``WEBSITE_AUTH_ENABLED`` unset): the principal
    header could come from anyone, so every request is refused until the operator turns it on."""

    code = "easyauth_not_enabled"


class ModelTimeout(ServiceUnavailable):
    """The model did not answer in time, or the turn outlived ``ORC_TURN_TIMEOUT``; nothing was stored."""

    code = "model_timeout"
    status = 504


class JobBusy(ServiceUnavailable):
    """Another worker holds the queued job's claim; the delivery is retried later (the queue redelivers it)."""

    code = "job_busy"


# -- the operator must react --------------------------------------------------------------------------------------


class ConfigurationError(OrcError):
    """A required setting is missing or inconsistent."""

    code = "configuration_error"
    status = 500


class LifespanFailed(ConfigurationError):
    """The app's start-up failed behind the Azure Functions relay; the message is the app's own (it names the
    setting at fault and never a secret)."""

    code = "startup_failed"


class PromptFileError(ConfigurationError):
    """A prompt file (packaged, or an ``ORC_PROMPTS_DIR`` override) that breaks the manifest or the sheet rules; the
    message names the file, and the process does not start with it."""

    code = "prompt_file_invalid"

    def __init__(self, message: str, *, file: str) -> None:
        super().__init__(message)
        self.file = file


class ModelMisconfigured(ConfigurationError):
    """The model provider refused orc's credentials or deployment (401, 403, 404): the operator must fix them."""

    code = "model_misconfigured"
    status = 502


# -- the model misbehaved -----------------------------------------------------------------------------------------


class ModelBehaviourError(OrcError):
    """The model's output could not be used, even after a retry."""

    code = "model_error"
    status = 502


# -- the developer must react -------------------------------------------------------------------------------------


class ModelRequestsForbidden(OrcError):
    """A real model request was attempted while they are forbidden (tests)."""

    code = "model_requests_forbidden"
    status = 500


class InternalError(OrcError):
    """An outcome orc's own code must handle; one that reaches a client is a bug.

    Clients never see the class's ``code`` or message: HTTP answers ``internal_error`` with a generic detail, an
    MCP tool answers ``internal_error``, and a turn's stream ends with the generic ``internal_error`` event.
    """

    code = "internal_error"
    status = 500


class StorageError(InternalError):
    """Base of the storage port errors (:mod:`orc.storage.ports`); the code calling the port handles them.

    Messages never include account URLs or keys.
    """

    code = "storage_error"


class ItemNotFound(StorageError):
    """The item or blob does not exist."""

    code = "item_not_found"


class ItemAlreadyExists(StorageError):
    """``create`` found an item with the same id in the partition (or a blob with ``if_none_match``)."""

    code = "item_already_exists"


class ETagMismatch(StorageError):
    """An ``if_match`` ETag no longer matches the stored version."""

    code = "etag_mismatch"


class ScriptExhausted(InternalError, AssertionError):
    """A scripted model double (:mod:`orc.testing.scripted`) was asked for more responses than its script holds.

    Also an :class:`AssertionError`, so pytest reports it as a failed expectation of the test.
    """

    code = "script_exhausted"
