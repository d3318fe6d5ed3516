"""The one place model-provider failures become orc errors with a stable code.

langchain-openai lets the OpenAI SDK's exceptions through (after the SDK's own bounded retries); without this
mapping every one of them reached the client as a bare ``internal_error``:

============================================  ======================================  ===========================
provider failure                              orc error                               HTTP
============================================  ======================================  ===========================
429, 5xx, connection refused or cut           :class:`~orc.errors.ModelUnavailable`   503 + ``Retry-After``
request timeout, the turn's own deadline      :class:`~orc.errors.ModelTimeout`       504
400 ``context_length_exceeded``               :class:`~orc.errors.ContextTooLong`     413
401, 403, 404 (key, role or deployment)       :class:`~orc.errors.ModelMisconfigured`  502
a body that is not the JSON it should be      :class:`~orc.errors.ModelBehaviourError` 502
============================================  ======================================  ===========================

Messages never repeat the provider's text: a 401's text can quote the API key.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    import openai

from orc.errors import (
    ContextTooLong,
    ModelBehaviourError,
    ModelMisconfigured,
    ModelTimeout,
    ModelUnavailable,
    OrcError,
)

log = logging.getLogger(__name__)

_DEFAULT_RETRY_AFTER = 5.0
_CONTEXT_CODES = ("context_length_exceeded", "string_above_max_length")


def model_fault(exc: BaseException) -> OrcError | None:
    """The orc error for a model-provider failure, or ``None`` when ``exc`` is not one."""
    if isinstance(exc, OrcError):
        return None
    # Only a process that imported the OpenAI client can hold one of its errors; importing it here would cost
    # every process on the offline model about a second of CPU at start-up.
    client = sys.modules.get("openai")
    if isinstance(exc, httpx.TimeoutException) or (client and isinstance(exc, client.APITimeoutError)):
        return ModelTimeout("the model did not answer in time; nothing was stored. Retry later.", retry_after=5)
    if isinstance(exc, httpx.TransportError) or (client and isinstance(exc, client.APIConnectionError)):
        return ModelUnavailable("the model could not be reached; nothing was stored", retry_after=_DEFAULT_RETRY_AFTER)
    if client and isinstance(exc, client.APIStatusError):
        return _status_fault(exc)
    if (client and isinstance(exc, client.APIResponseValidationError)) or (
        isinstance(exc, json.JSONDecodeError) and _raised_by_the_provider_client(exc)
    ):
        log.warning("the model provider sent a response that is not valid JSON")
        return ModelBehaviourError("the model sent a malformed response; nothing was stored. Retry later.")
    return None


def _raised_by_the_provider_client(exc: BaseException) -> bool:
    """Whether the OpenAI client raised ``exc`` (while reading a provider's response), not orc's own code."""
    frame = exc.__traceback__
    while frame is not None:
        if str(frame.tb_frame.f_globals.get("__name__", "")).startswith("openai."):
            return True
        frame = frame.tb_next
    return False


def _status_fault(exc: openai.APIStatusError) -> OrcError:
    status = exc.status_code
    if status == 429 or status >= 500:
        log.warning("the model provider answered %s", status)
        return ModelUnavailable(
            "the model is overloaded or failing; nothing was stored", retry_after=_retry_after(exc.response)
        )
    if status in (401, 403, 404):
        # An operator problem: the key, the role assignment or the deployment name. The provider's text is not
        # logged (it may quote the key).
        log.error("the model provider refused orc's credentials or deployment (HTTP %s)", status)
        return ModelMisconfigured("the model is misconfigured on the server; nothing was stored")
    code = getattr(exc, "code", None) or ""
    if status in (400, 413) and (code in _CONTEXT_CODES or "context length" in str(exc.message).lower()):
        return ContextTooLong(
            "the conversation and sources are longer than the model's context window; start a new conversation "
            "or attach fewer files"
        )
    log.warning("the model provider refused a request (HTTP %s, code %s)", status, code or "-")
    return ModelMisconfigured("the model refused the request; nothing was stored")


def _retry_after(response: Any) -> float:
    """The provider's own hint (``retry-after-ms`` or ``retry-after`` seconds), else a few seconds."""
    if response is None:
        return _DEFAULT_RETRY_AFTER
    for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = response.headers.get(header)
        if value:
            try:
                return max(1.0, float(value) * scale)
            except ValueError:
                continue
    return _DEFAULT_RETRY_AFTER


@asynccontextmanager
async def mapped_model_faults() -> AsyncIterator[None]:
    """Re-raise model-provider failures inside the block as orc errors (see :func:`model_fault`)."""
    try:
        yield
    except Exception as exc:
        mapped = model_fault(exc)
        if mapped is None:
            raise
        raise mapped from exc
