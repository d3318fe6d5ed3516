"""Logs never carry secrets or (above DEBUG) tracebacks, whichever library writes them.

Installed by the entry points (:func:`orc.http.create_app`, so ``orc serve`` and the Functions app) as a log-record
factory: a filter on one handler would miss handlers configured later (uvicorn's, the Functions host's), while the
factory sees every record of every logger once, when it is made.

- Secrets: the configured ones (API keys, model key, Cosmos key, blob connection string) by value, and anything
  shaped like one (``sk-…`` keys, ``AccountKey=``/``SharedAccessSignature=`` parts of connection strings, SAS
  ``sig=``, bearer tokens, ``api-key`` values) by pattern; each becomes ``[redacted]``.
- Tracebacks: dropped from records above DEBUG unless their logger is enabled for DEBUG; the exception's type
  stays in the message.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import Any

REDACTED = "[redacted]"
_PATTERNS = re.compile(
    r"(?P<key>\bsk-[A-Za-z0-9_\-]{8,})"
    r"|(?P<conn>(?:AccountKey|SharedAccessSignature|SharedAccessKey|Password|Pwd)=)[^;\s\"']+"
    r"|(?P<sig>[?&]sig=)[^&\s\"']+"
    r"|(?P<bearer>\b[Bb]earer\s+)[A-Za-z0-9._~+/=\-]{8,}"
    r"|(?P<apikey>\b(?:api[-_]?key|x-api-key|api_key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;&}]{6,}",
    re.IGNORECASE,
)


class RedactSecrets(logging.Filter):
    """Rewrites a record so that it carries no secret and, above DEBUG, no traceback."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        # Longest first, so a secret containing another is replaced whole.
        self.secrets = sorted({secret for secret in secrets if len(secret) >= 6}, key=len, reverse=True)

    def redact(self, text: str) -> str:
        """``text`` without the configured secrets and anything shaped like a secret."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return _PATTERNS.sub(_keep_label, text)

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the message (formatted once, here) and drop a traceback that DEBUG is not enabled for."""
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the formatter's own error handling
            return True
        debugging = logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        if record.exc_info and record.levelno > logging.DEBUG and not debugging:
            exc = record.exc_info[1]
            if exc is not None:
                message = f"{message} ({type(exc).__name__})"
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        record.msg = self.redact(message)
        record.args = None
        return True


def _keep_label(match: re.Match[str]) -> str:
    for label in ("conn", "sig", "bearer", "apikey"):
        if match.group(label):
            return match.group(label) + REDACTED
    return REDACTED


_installed: RedactSecrets | None = None


def install(secrets: Iterable[str] = ()) -> RedactSecrets:
    """Redact every log record made from now on in this process (idempotent; later calls add secrets)."""
    global _installed
    if _installed is not None:
        _installed.secrets = sorted(
            {*_installed.secrets, *(secret for secret in secrets if len(secret) >= 6)}, key=len, reverse=True
        )
        return _installed
    redactor = _installed = RedactSecrets(secrets)
    previous: Callable[..., logging.LogRecord] = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        redactor.filter(record)
        return record

    logging.setLogRecordFactory(factory)
    return redactor
