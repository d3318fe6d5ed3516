"""An error as the terminal says it: ``error (code): message``, with what the message lists cut to what a reader
needs (the server's refusal of an unknown file type names all ~80 extensions it reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `orc --help` must not load the settings machinery
    from orc.settings import Settings

READABLE_KINDS = (
    "PDF, Word, PowerPoint, Excel, HTML, Markdown, text, CSV, JSON, and source code and configuration files"
)
"""What orc reads, in the words of the README (docs/documents.md lists the details)."""


def short_message(code: str, message: str) -> str:
    """``message`` without the list of every supported extension, naming the kinds of file orc reads instead."""
    if code == "unsupported_media_type" and " (supported: " in message:
        return f"{message.split(' (supported: ')[0]}; orc reads {READABLE_KINDS}"
    return message


def error_line(code: str, message: str) -> str:
    """``error (code): message``, the message cut by :func:`short_message`."""
    return f"error ({code}): {short_message(code, message)}"


def settings_from_environment() -> Settings:
    """The ``ORC_`` settings; a value that does not fit is a :class:`~orc.errors.ConfigurationError` naming each
    variable in words (``ORC_MAX_UPLOAD_BYTES: must be a whole number (got 'abc')``), not pydantic's report with
    its traceback and links."""
    from pydantic import ValidationError

    from orc.settings import Settings

    try:
        return Settings()
    except ValidationError as exc:
        from orc.errors import ConfigurationError
        from orc.plain_errors import plain_errors

        lines = plain_errors(exc, lambda field: f"ORC_{field.upper()}")
        raise ConfigurationError("\n  ".join(lines)) from None
