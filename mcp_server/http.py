"""Serve the MCP server over streamable HTTP, to be mounted in the HTTP app at ``/api/mcp``.

Stateless with JSON responses: every POST is answered by one JSON body, so it works behind hosts that buffer
responses (Azure Functions) and on any number of instances. DNS-rebinding protection stays on: a Host header
that is not allowed gets 421.

FastMCP's own Starlette app routes only its ``streamable_http_path``; mounted at ``/api/mcp`` it answers
``/api/mcp/`` and the outer router would redirect ``/api/mcp`` there (307), which proxies and clients
handle badly. The endpoint returned here ignores the path instead; :func:`mcp_routes` routes both spellings
to it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

from mcp.server.fastmcp import FastMCP
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from orc.json_depth import MAX_JSON_DEPTH, too_deep


class _StreamableHttpEndpoint:
    """An ASGI app that hands every HTTP request to the server's session manager, whatever its path.

    Its tool results are cleaned by the output policy where the HTTP app serializes every response
    (:mod:`orc.http.output_door`), not here.
    """

    def __init__(self, server: FastMCP) -> None:
        self._server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") == "POST":
            # The SDK parses the body with a recursive parser: a deeply nested one made it answer 500.
            request_body, receive = await _read_body(receive)
            if too_deep(request_body):
                await _parse_error(send, f"the JSON-RPC message nests deeper than {MAX_JSON_DEPTH} levels")
                return
        await self._server.session_manager.handle_request(scope, receive, send)


async def _read_body(receive: Receive) -> tuple[bytes, Receive]:
    """The whole request body, and a ``receive`` that hands it on again (then whatever comes next)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def _parse_error(send: Send, detail: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: {detail}"}})
    await send(
        {
            "type": "http.response.start",
            "status": 400,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body.encode()})


def default_allowed_origins(allowed_hosts: Sequence[str]) -> list[str]:
    """``http://`` and ``https://`` origins for each allowed host pattern (browsers send an Origin header)."""
    return [f"{scheme}://{host}" for host in allowed_hosts for scheme in ("http", "https")]


def build_mcp_http_app(
    server: FastMCP,
    *,
    allowed_hosts: list[str],
    allowed_origins: list[str] | None = None,
) -> tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[None]]]:
    """Configure ``server`` for stateless JSON streamable HTTP; return the endpoint and its lifespan.

    ``allowed_hosts`` are Host header values, exact or with a ``:*`` port wildcard (``"orc.example.com"``,
    ``"127.0.0.1:*"``). Enter the returned lifespan (once: the session manager cannot be restarted) in the
    outer app's lifespan, and route both ``/api/mcp`` and ``/api/mcp/`` to the endpoint (:func:`mcp_routes`).
    Serve it behind the output policy (the HTTP app's :class:`~orc.http.output_door.OutputDoor` does).

    Must be called before anything else calls ``server.streamable_http_app()``: the SDK freezes these
    settings into the session manager on the first call.
    """
    try:
        _ = server.session_manager
    except RuntimeError:
        pass
    else:
        raise RuntimeError("this server's HTTP transport is already configured; build a new server")
    if not allowed_hosts:
        raise ValueError("allowed_hosts must name at least one Host header value")

    server.settings.stateless_http = True
    server.settings.json_response = True
    server.settings.streamable_http_path = "/"
    server.settings.transport_security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(allowed_hosts),
        allowed_origins=list(allowed_origins)
        if allowed_origins is not None
        else default_allowed_origins(allowed_hosts),
    )
    # Creates the session manager with the settings above; FastMCP's own Starlette wrapper is not used.
    server.streamable_http_app()

    def lifespan() -> AbstractAsyncContextManager[None]:
        return server.session_manager.run()

    return _StreamableHttpEndpoint(server), lifespan


def mcp_routes(path: str, app: ASGIApp) -> list[BaseRoute]:
    """Routes serving ``app`` at ``path`` and ``path + "/"`` without a redirect (e.g. ``"/api/mcp"``)."""
    base = path.rstrip("/")
    if not base.startswith("/"):
        raise ValueError("path must start with '/' and not be the root")
    return [Route(base, endpoint=app), Route(base + "/", endpoint=app)]
