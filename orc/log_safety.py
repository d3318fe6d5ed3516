"""Logs never carry secrets or (above DEBUG) tracebacks, whichever library writes them.

Installed by the composition root (:func:`orc.composition.build_foundation`, which every entry point builds: ``orc
serve`` and the Functions app, every ``orc`` command, ``orc worker``, the queue and timer functions, the stdio MCP
server) and, earliest, by :func:`orc.http.create_app`, as a log-record factory: a filter on one handler would miss
handlers configured later (uvicorn's, the Functions host's), while the factory sees every record of every logger
once, when it is made.

- Secrets: the configured ones (API keys, model key, Cosmos key, blob connection string) by value, and anything
  shaped like one (``sk-…`` keys, ``AccountKey=``/``SharedAccessSignature=`` parts of connection strings, SAS
  ``sig=``, bearer tokens, ``api-key`` values) by pattern; each becomes ``[redacted]``.
- Tracebacks: dropped from records above DEBUG unless their logger is enabled for DEBUG; the exception's type
  stays in the message. A traceback that stays is formatted here and redacted like the message (an exception's
  text often quotes the request that failed, key included).
- A record keeps its arguments (each redacted): formatters such as uvicorn's access formatter unpack them, and a
  record without them made every access line a "Logging error".
- Fields passed with ``extra=`` are redacted too (strings, and strings inside lists, tuples and dicts): JSON
  formatters and the OpenTelemetry log exporter send them as attributes beside the message.
"""

from __future__ import annotations

import logging
import os
import re
import traceback
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from orc.secret_patterns import REDACTED, SECRET_PATTERNS, redaction

if TYPE_CHECKING:
    from orc.settings import Settings

_PATTERNS = tuple(re.compile(pattern) for pattern in SECRET_PATTERNS)


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
        for pattern in _PATTERNS:
            text = pattern.sub(redaction, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the message and its arguments, drop a traceback that DEBUG is not enabled for, and redact the
        one that stays."""
        try:
            record.getMessage()
        except Exception:  # a malformed record: leave it to the formatter's own error handling
            return True
        record.msg = self.redact(str(record.msg))
        record.args = self._redacted_args(record.args)
        debugging = logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        if record.exc_info and record.levelno > logging.DEBUG and not debugging:
            exc = record.exc_info[1]
            if exc is not None:
                record.msg = f"{record.msg} ({type(exc).__name__})"
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        elif record.exc_info and record.exc_info[0] is not None:
            # Formatted now, redacted, and kept as the text formatters print (they format exc_info only when
            # exc_text is empty).
            record.exc_text = self.redact("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
            record.exc_info = None
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True

    def _redacted_args(self, args: Any) -> Any:
        if not args:
            return args
        if isinstance(args, dict):
            return {key: self._redacted_arg(value) for key, value in args.items()}
        if isinstance(args, tuple):
            return tuple(self._redacted_arg(value) for value in args)
        return self._redacted_arg(args)

    def redacted_extra(self, value: Any) -> Any:
        """An ``extra=`` field's value without secrets."""
        # Strings only, keeping each container's type: an exporter reads an attribute's type, and a field that is
        # not text (a number, an object a filter attached) carries no configured secret as such.
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, list | tuple):
            return type(value)(self.redacted_extra(item) for item in value)
        if isinstance(value, dict):
            return {key: self.redacted_extra(item) for key, item in value.items()}
        return value

    def _redacted_arg(self, value: Any) -> Any:
        if value is None or isinstance(value, bool | int | float):
            return value  # %d and %f need numbers; numbers carry no secret
        return self.redact(value if isinstance(value, str) else str(value))


def configured_secrets(settings: Settings) -> list[str]:
    """The secret values ``settings`` hold (API keys and every secret field: model and embedding keys, Cosmos and
    Blob keys, connection strings), and those of environment variables named like secrets, which client libraries
    read by themselves: no log line may carry them."""
    secrets = [*settings.api_keys]
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            secrets += [value.get_secret_value(), *_connection_string_secrets(value.get_secret_value())]
    return secrets + environment_secrets()


_SECRET_PART = re.compile(r"(?i)key|signature|password|pwd|secret|token")


def _connection_string_secrets(value: str) -> list[str]:
    """The key of ``AccountName=…;AccountKey=…``: a client library may log it without the rest."""
    parts = (part.partition("=") for part in value.split(";") if "=" in part)
    return [secret for name, _, secret in parts if _SECRET_PART.search(name) and len(secret) >= 8]


_SECRET_NAMES = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|CONNECTION_STRING|CONNECTIONSTRING|SAS", re.IGNORECASE)


def environment_secrets(environ: os._Environ[str] | dict[str, str] | None = None) -> list[str]:
    """The values of environment variables named like secrets (``AZURE_OPENAI_API_KEY``, ``OPENAI_API_KEY``,
    ``AzureWebJobsStorage``'s connection string...): client libraries read them without orc's settings."""
    environ = os.environ if environ is None else environ
    values = [
        value
        for name, value in environ.items()
        if len(value) >= 8 and (_SECRET_NAMES.search(name) or name.lower() == "azurewebjobsstorage")
    ]
    return values + [part for value in values for part in _connection_string_secrets(value)]


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
    _redact_extra_fields(redactor)
    return redactor


def _redact_extra_fields(redactor: RedactSecrets) -> None:
    # makeRecord applies ``extra=`` after the record factory has run, so the factory never sees those fields.
    # Overriding makeRecord is the extension point logging documents for this; on the class, so loggers made
    # before this call are covered too.
    make_record = logging.Logger.makeRecord

    def redacting(self: logging.Logger, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(self, *args, **kwargs)
        # Logger._log passes every argument by position: (name, level, fn, lno, msg, args, exc_info, func, extra).
        extra = kwargs.get("extra", args[8] if len(args) > 8 else None)
        for name in extra or ():
            record.__dict__[name] = redactor.redacted_extra(record.__dict__[name])
        return record

    logging.Logger.makeRecord = redacting  # type: ignore[method-assign]
