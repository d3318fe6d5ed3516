"""An error as the terminal says it: ``error (code): message``, with what the message lists cut to what a reader
needs (the server's refusal of an unknown file type names all ~80 extensions it reads)."""

from __future__ import annotations

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
