"""Requests and responses as the Functions HTTP-streams extension hands them to a function, built in process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Message


def worker_request(
    method: str, url: str, *, body: bytes = b"", headers: dict[str, str] | None = None, chunk_size: int = 64 * 1024
) -> Request:
    """The worker's Starlette request for ``url``: its body arrives in ``chunk_size`` pieces, as over a socket."""
    parts = urlsplit(url)
    pieces = [body[i : i + chunk_size] for i in range(0, len(body), chunk_size)] or [b""]
    sent = 0

    async def receive() -> Message:
        nonlocal sent
        if sent < len(pieces):
            sent += 1
            return {"type": "http.request", "body": pieces[sent - 1], "more_body": sent < len(pieces)}
        return {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "server": ("127.0.0.1", 7071),
        "client": ("203.0.113.7", 50123),
        "root_path": "",
        "path": parts.path,
        "raw_path": parts.path.encode(),
        "query_string": parts.query.encode(),
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()],
    }
    return Request(scope, receive)


@dataclass
class Answer:
    """A relayed response read to its end."""

    status: int
    headers: httpx.Headers
    body: bytes = field(repr=False)
    chunks: list[bytes] = field(default_factory=list, repr=False)

    def json(self) -> Any:
        """The body as JSON."""
        return httpx.Response(self.status, content=self.body).json()


async def read(response: Response) -> Answer:
    """Status, headers and the whole body (chunk by chunk for a streaming response)."""
    headers = httpx.Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in response.raw_headers])
    if isinstance(response, StreamingResponse):
        chunks = [chunk if isinstance(chunk, bytes) else chunk.encode() async for chunk in response.body_iterator]
        return Answer(response.status_code, headers, b"".join(chunks), chunks)
    return Answer(response.status_code, headers, bytes(response.body), [bytes(response.body)])


def multipart(name: str, data: bytes) -> tuple[bytes, dict[str, str]]:
    """A multipart upload body with one file, and its content type."""
    built = httpx.Request("POST", "http://localhost/", files=[("files", (name, data, "text/plain"))])
    return built.read(), {"content-type": built.headers["content-type"]}


async def lines(body: AsyncIterator[Any]) -> AsyncIterator[bytes]:
    """Complete lines of a streamed body, as they arrive."""
    pending = b""
    async for chunk in body:
        pending += chunk if isinstance(chunk, bytes) else chunk.encode()
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line:
                yield line
