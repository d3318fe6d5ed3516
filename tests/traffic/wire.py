"""Requests written byte by byte on a plain socket, the ways real clients write them: head and body in one write,
the body in many small writes, chunked transfer, and ``Expect: 100-continue``."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass
from typing import Literal

WriteMode = Literal["one-write", "small-writes", "chunked", "expect-continue"]
WRITE_MODES: tuple[WriteMode, ...] = ("one-write", "small-writes", "chunked", "expect-continue")
SMALL_WRITE = 1400
"""About one TCP segment's payload: the most pieces a client can cut a body into."""


@dataclass(frozen=True)
class Answer:
    status: int
    head: bytes
    body: bytes


def multipart(field: str, filename: str, content: bytes, content_type: str) -> tuple[bytes, str]:
    """A multipart/form-data body with one file, and its content type."""
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
            f"Content-Type: {content_type}\r\n\r\n"
        ).encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def _read_head(sock: socket.socket, buffered: bytearray) -> bytes:
    while b"\r\n\r\n" not in buffered:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"the server closed the connection after {bytes(buffered)[:200]!r}")
        buffered += chunk
    head, _, rest = bytes(buffered).partition(b"\r\n\r\n")
    buffered[:] = rest
    return head


def _content_length(head: bytes) -> int | None:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return None


def send(
    address: tuple[str, int],
    method: str,
    path: str,
    body: bytes,
    content_type: str,
    mode: WriteMode,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 120.0,
) -> Answer:
    """Write one request in ``mode`` and read its answer (a final status, after any ``100 Continue``)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {address[0]}:{address[1]}", f"Content-Type: {content_type}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    lines.append("Connection: close")
    if mode == "chunked":
        lines.append("Transfer-Encoding: chunked")
    else:
        lines.append(f"Content-Length: {len(body)}")
    if mode == "expect-continue":
        lines.append("Expect: 100-continue")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    buffered = bytearray()
    with socket.create_connection(address, timeout=timeout) as sock:
        if mode == "one-write":
            sock.sendall(head + body)
        elif mode == "small-writes":
            sock.sendall(head)
            for start in range(0, len(body), SMALL_WRITE):
                sock.sendall(body[start : start + SMALL_WRITE])
        elif mode == "chunked":
            pieces = [body[start : start + 65536] for start in range(0, len(body), 65536)]
            sock.sendall(head + b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n")
        else:
            sock.sendall(head)
            interim = _read_head(sock, buffered)
            if not interim.startswith(b"HTTP/1.1 100"):
                return Answer(int(interim.split(b" ", 2)[1]), interim, bytes(buffered))
            sock.sendall(body)
        answer_head = _read_head(sock, buffered)
        while answer_head.startswith(b"HTTP/1.1 100"):
            answer_head = _read_head(sock, buffered)
        length = _content_length(answer_head)
        while length is None or len(buffered) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buffered += chunk
    return Answer(int(answer_head.split(b" ", 2)[1]), answer_head, bytes(buffered))
