"""Bounds on client connections for ``orc serve``: a deadline and a size limit on every request head, and a deadline
on every request body the server answers without reading, under either HTTP parser uvicorn may run (httptools, or
h11 where httptools is not installed).

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

**Bodies the server does not read.** A request answered before its body is read (401 without a key, 404, 405, a
413 or 429 refusal) leaves the rest of its body on the wire. uvicorn kept reading and discarding it for as long as
it came, and every byte put off the keep-alive timeout: clients dripping one byte every few seconds held their
connections, and their slots in ``limit_concurrency``, for ever (8,191 of them made ``/api/health`` answer 503).
And a refusal that closed the connection at once, with the body still arriving, made the kernel reset it: a
client still writing its upload saw a reset, never the 429. So a connection whose response is complete while its
request's body is not is closed gracefully (*lingering close*, as nginx and Apache do): the response is flushed,
the server's side is shut for writing, and what the client still sends is read and dropped until it stops, for at
most ``LINGER_SECONDS``; then the connection is closed. The client reads the whole answer; a dripping client is cut
off.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal, cast

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEADER_TIMEOUT_SECONDS = 10.0
KEEP_ALIVE_SECONDS = 20
"""How long an idle keep-alive connection stays open. Clients reuse an idle connection for a time of their own
(Node's fetch 4 s, httpx 5 s, aiohttp 15 s) and do not resend a POST whose connection the server closed as it was
being written: a server that closes at about the clients' own time races their next request (the MCP Inspector's
POST failed with "other side closed" on a busy machine at 5 s). So the server outlives them, by more than a busy
loop's lag."""
MAX_CONNECTIONS = 8192
"""Per process; beyond it uvicorn answers 503 at once instead of queueing (``limit_concurrency``). High enough that
one caller's burst of connections does not reach it before orc's own per-caller limits refuse them (at a lower
limit one principal's slow bodies could take every slot and every other caller would get 503); an idle connection
costs a few kilobytes, and the head deadline closes one that says nothing."""
MAX_HEADER_BYTES = 64 * 1024
"""Bytes of one request head (request line and headers)."""
LINGER_SECONDS = 10.0
"""How long the rest of a body the server answered without reading may keep arriving (and is dropped) before its
connection is closed: enough for a client on a slow link to finish writing a refused upload and read the answer."""

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


class _LingeringTransport:
    """The connection's transport as uvicorn sees it: closing it while the request's body is still arriving lingers
    (see the module docstring) instead of resetting the connection; everything else is the real transport's."""

    def __init__(self, transport: asyncio.Transport, connection: _HeadLimits) -> None:
        self._transport = transport
        self._connection = connection

    def close(self) -> None:
        if self._connection._body_arriving() and not self._transport.is_closing():
            self._connection._linger()
        else:
            self._transport.close()

    def is_closing(self) -> bool:
        return self._connection._lingering or self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class _HeadLimits(asyncio.Protocol):
    """The deadline and the size limit on a request head, shared by both protocols below (mixed in before uvicorn's
    protocol class). The deadline starts when the connection opens and stops when it is lost; the protocol says when
    a later head starts (:meth:`_head_started`) and ends (:meth:`_head_done`) and counts its bytes
    (:meth:`_count`)."""

    header_timeout: float = HEADER_TIMEOUT_SECONDS
    max_header_bytes: int = MAX_HEADER_BYTES
    linger_seconds: float = LINGER_SECONDS
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
        self._real_transport: asyncio.Transport | None = None
        self._lingering = False
        self._linger_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not an isinstance check: uvloop's transports are not asyncio.Transport subclasses.
        self._real_transport = cast(asyncio.Transport, transport)
        super().connection_made(cast(asyncio.Transport, _LingeringTransport(self._real_transport, self)))
        self._head_started()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_deadline()
        if self._linger_deadline is not None:
            self._linger_deadline.cancel()
            self._linger_deadline = None
        super().connection_lost(exc)

    def _body_arriving(self) -> bool:
        """Whether the request just answered has a body whose rest has not arrived yet."""
        raise NotImplementedError

    def on_response_complete(self) -> None:
        """uvicorn's end of a response: a connection whose request body is still arriving is not kept alive (its
        unread rest would hold it, byte by byte, for as long as the client likes); it lingers, then closes."""
        if self._body_arriving() and not self.transport.is_closing():
            self.transport.close()
        super().on_response_complete()  # type: ignore[misc]

    def _linger(self) -> None:
        """Shut the server's side for writing once the response is flushed, and drop what the client still sends
        until it stops or :attr:`linger_seconds` pass."""
        transport = self._real_transport
        assert transport is not None
        self._lingering = True
        self._stop_deadline()
        transport.resume_reading()  # flow control may have paused it while the app did not read
        if transport.can_write_eof():
            transport.write_eof()
        # The client's own close ends it sooner: uvicorn's eof_received lets asyncio close the transport.
        self._linger_deadline = self.loop.call_later(self.linger_seconds, transport.close)

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
        """uvicorn's httptools protocol with a deadline and a size limit on each request head, and a deadline on
        each body it answers without reading."""

        _body_cycle: Any = None
        """The request whose body is arriving (uvicorn's cycle), from its head's end to its message's."""

        def _body_arriving(self) -> bool:
            # Only once its own response is complete: a pipelined request's body arriving while the previous
            # request is answered is simply early.
            return self._body_cycle is not None and bool(self._body_cycle.response_complete)

        def data_received(self, data: bytes) -> None:
            if self._lingering:
                return  # the rest of a body nobody reads
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
            self._body_cycle = self.cycle  # until its message completes (at once, for a request without a body)

        def on_message_complete(self) -> None:
            self._body_cycle = None
            super().on_message_complete()
            # What arrives next is the next request's head (its deadline starts with its first byte).
            self._in_head = True

    # Named as the module-level name that holds it: `orc serve --workers N` pickles the server config for its
    # spawned workers, and pickle finds a class by its qualified name.
    HeaderDeadlineProtocol.__name__ = HeaderDeadlineProtocol.__qualname__ = "HttpToolsHeadLimitsProtocol"
    return HeaderDeadlineProtocol


class H11HeadLimitsProtocol(_HeadLimits, H11Protocol):
    """uvicorn's h11 protocol with a deadline and a size limit on each request head, and a deadline on each body
    it answers without reading."""

    def _body_arriving(self) -> bool:
        return self.conn.their_state is h11.SEND_BODY

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # the rest of a body nobody reads
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
