"""Bounds on client connections for ``orc serve``: a deadline and a size limit on every request head, under either
HTTP parser uvicorn may run (httptools, or h11 where httptools is not installed).

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but sets no deadline on reading a request's
head: a client that sends a header line every few seconds (slowloris) would hold its connection, and its slot in
``limit_concurrency``, for ever. And httptools sets no limit on a head's size: a header of several megabytes is
read and answered, and a few such connections grow the server's memory by their size. The protocols here close a
connection whose request line and headers are not complete within ``HEADER_TIMEOUT_SECONDS`` of its first byte (or
of the connection opening), and answer 431 and close when a head grows past ``MAX_HEADER_BYTES`` — counted by the
protocol itself, so the limit holds whichever parser reads the bytes (h11's own ``max_incomplete_event_size`` only
looks at a head that is still incomplete after a read).

Only the head is counted: browsers and most clients write a request's head and the start of its body together, and
one read on loopback often holds the head and tens of kilobytes of body. A read's bytes count up to the blank line
that ends the head, never past it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_SECONDS = 10.0
KEEP_ALIVE_SECONDS = 5
MAX_CONNECTIONS = 8192
"""Per process; beyond it uvicorn answers 503 at once instead of queueing (``limit_concurrency``). High enough that
one caller's burst of connections does not reach it before orc's own per-caller limits refuse them (at a lower
limit one principal's slow bodies could take every slot and every other caller would get 503); an idle connection
costs a few kilobytes, and the head deadline closes one that says nothing."""
MAX_HEADER_BYTES = 64 * 1024
"""Bytes of one request head (request line and headers)."""

_HEAD_ENDS = (b"\n\r\n", b"\n\n")
"""A head ends at its first empty line; a line ends with CRLF, or LF alone, which both parsers accept."""
_TAIL_BYTES = max(len(end) for end in _HEAD_ENDS) - 1


def _head_end(window: bytes) -> int | None:
    """The index just past the first empty line in ``window``, or None when it holds none."""
    ends = [found + len(end) for end in _HEAD_ENDS if (found := window.find(end)) >= 0]
    return min(ends) if ends else None


def _head_too_large_response() -> bytes:
    body = json.dumps(
        {
            "type": "about:blank",
            "title": "Request Header Fields Too Large",
            "status": 431,
            "code": "headers_too_large",
            "detail": f"the request line and headers are larger than {MAX_HEADER_BYTES} bytes",
        }
    ).encode()
    head = (
        "HTTP/1.1 431 Request Header Fields Too Large\r\n"
        "content-type: application/problem+json\r\n"
        "x-content-type-options: nosniff\r\n"
        "connection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


class _HeadLimits(asyncio.Protocol):
    """The deadline and the size limit on a request head, shared by both protocols below (mixed in before uvicorn's
    protocol class). The deadline starts when the connection opens and stops when it is lost; the protocol says when
    a later head starts (:meth:`_head_started`) and ends (:meth:`_head_done`) and counts its bytes
    (:meth:`_count`)."""

    header_timeout: float = HEADER_TIMEOUT_SECONDS
    max_header_bytes: int = MAX_HEADER_BYTES
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_deadline: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._in_head = True
        self._tail = b""
        """The last bytes of the head so far: its empty line may start in one read and end in the next."""
        self._head_text_seen = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._head_started()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        super().connection_lost(exc)

    def _head_started(self) -> None:
        self._in_head = True
        if self._header_deadline is None:
            self._header_deadline = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _head_done(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        self._tail = b""
        self._head_text_seen = False
        self._stop_deadline()

    def _stop_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _count(self, data: bytes) -> None:
        """Count the bytes of ``data`` that belong to the head in progress: up to its empty line, not the body that
        came in the same read. Empty lines before a request line (which both parsers skip) are counted, but do not
        end the head."""
        if not self._in_head:
            return
        start = 0
        if not self._head_text_seen:
            start = len(data) - len(data.lstrip(b"\r\n"))
            self._head_text_seen = start < len(data)
        window = self._tail + data[start:]
        end = _head_end(window)
        self._head_bytes += start + (len(window) if end is None else end) - len(self._tail)
        self._tail = window[-_TAIL_BYTES:] if end is None else b""

    def _head_too_large(self) -> bool:
        """Answer 431 and close when the head in progress passed the limit; whether it did."""
        if not (self._in_head and self._head_bytes > self.max_header_bytes):
            return False
        self._stop_deadline()
        if not self.transport.is_closing():
            self.transport.write(_head_too_large_response())
            self.transport.close()
        return True

    def _headers_too_slow(self) -> None:
        self._header_deadline = None
        if not self.transport.is_closing():
            self.transport.close()


def _httptools_protocol() -> type[Any] | None:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools has no build for this platform: h11 serves
        return None

    class HeaderDeadlineProtocol(_HeadLimits, HttpToolsProtocol):
        """uvicorn's httptools protocol with a deadline and a size limit on each request head."""

        def data_received(self, data: bytes) -> None:
            self._count(data)
            if self._head_too_large():
                return
            super().data_received(data)
            self._head_too_large()

        def on_message_begin(self) -> None:
            self._head_started()
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._head_done()
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            # What arrives next is the next request's head (its deadline starts with its first byte).
            self._in_head = True

    # Named as the module-level name that holds it: `orc serve --workers N` pickles the server config for its
    # spawned workers, and pickle finds a class by its qualified name.
    HeaderDeadlineProtocol.__name__ = HeaderDeadlineProtocol.__qualname__ = "HttpToolsHeadLimitsProtocol"
    return HeaderDeadlineProtocol


class H11HeadLimitsProtocol(_HeadLimits, H11Protocol):
    """uvicorn's h11 protocol with a deadline and a size limit on each request head."""

    def data_received(self, data: bytes) -> None:
        # h11 is IDLE on the client's side until it has read a whole request head.
        if self.conn.their_state is h11.IDLE:
            self._in_head = True
        self._count(data)
        if self._head_too_large():
            return
        super().data_received(data)
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.IDLE:
            if not self._head_too_large():
                self._head_started()
        else:
            self._head_done()


HttpToolsHeadLimitsProtocol = _httptools_protocol()
HeaderDeadlineProtocol = HttpToolsHeadLimitsProtocol or H11HeadLimitsProtocol
"""The protocol ``orc serve`` runs: httptools' when it is installed, else h11's; both bound request heads."""


HttpParser = Literal["auto", "httptools", "h11"]


def head_limits_protocol(parser: HttpParser = "auto") -> type[Any]:
    """The bounded protocol for ``parser`` (``auto``: httptools when it is installed, else h11)."""
    if parser == "h11":
        return H11HeadLimitsProtocol
    if parser == "httptools" and HttpToolsHeadLimitsProtocol is None:
        raise ValueError("the httptools parser is not installed on this platform")
    return HeaderDeadlineProtocol


def server_options(parser: HttpParser = "auto") -> dict[str, Any]:
    """uvicorn options that bound connections (``orc serve`` passes them; explicit options override them)."""
    return {
        "http": head_limits_protocol(parser),
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
        "limit_concurrency": MAX_CONNECTIONS,
        "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
    }
