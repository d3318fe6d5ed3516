"""Bounds on client connections for ``orc serve``: a header-read deadline on top of uvicorn's own limits.

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but sets no deadline on reading a request's
headers: a client that sends a header line every few seconds (slowloris) held its connection, and its slot in
``limit_concurrency``, for ever. :class:`HeaderDeadlineProtocol` closes a connection whose request line and
headers are not complete within ``HEADER_TIMEOUT_SECONDS`` of its first byte (or of the connection opening).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADER_TIMEOUT_SECONDS = 10.0
KEEP_ALIVE_SECONDS = 5
MAX_CONNECTIONS = 2048
"""Per process; beyond it uvicorn answers 503 at once instead of queueing (``limit_concurrency``)."""
MAX_HEADER_BYTES = 64 * 1024
"""Bytes of an incomplete request head h11 buffers (httptools has its own fixed limit)."""


class HeaderDeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol plus a deadline on reading each request's headers."""

    header_timeout: float = HEADER_TIMEOUT_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        self._arm()
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def _arm(self) -> None:
        if self._header_deadline is None:
            self._header_deadline = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def server_options() -> dict[str, Any]:
    """uvicorn options that bound connections (``orc serve`` passes them; explicit options override them)."""
    return {
        "http": HeaderDeadlineProtocol,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        "limit_concurrency": MAX_CONNECTIONS,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
    }
