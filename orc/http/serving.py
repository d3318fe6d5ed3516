"""Serving the HTTP app with uvicorn (``orc serve``): one process, or several worker processes on one port.

One process serves many concurrent turns (they wait on the model together) until its event loop's core is
busy; more processes use more cores. Each worker builds its own app from the ``ORC_`` environment, so the
workers share the storage but not the in-process ``document_chat`` file cache: a follow-up that another worker
answers processes its files again (same answer, a little slower).

**TCP_NODELAY.** With ``workers`` > 1 uvicorn binds the listening socket itself with ``proto`` 0; accepted
sockets inherit it, and asyncio only sets ``TCP_NODELAY`` when ``proto == IPPROTO_TCP``, so every response on a
keep-alive connection would wait for the client's delayed ACK (uvicorn issue #3149). :func:`tcp_listener`
binds the socket with ``IPPROTO_TCP`` and hands it to uvicorn's own ``Multiprocess`` supervisor, as
``uvicorn.run`` would.

**Garbage collection.** A served process holds hundreds of thousands of long-lived objects from its imports and
start-up (modules, pydantic schemas, the compiled graph), and a full collection would walk all of them, a pause
paid by whichever turn allocated at the wrong moment. :func:`freeze_after_startup` moves them out of the
collector's generations once the app has started (``gc.freeze``), so a full collection walks only the objects of
the requests in flight. It also lets the youngest generation grow to :data:`YOUNG_GENERATION_THRESHOLD` objects
before a collection: a turn allocates thousands of short-lived containers, most freed by their reference counts,
and at Python's default of 700 the collector walked the live ones of the turns in flight about once a turn.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from orc.http.connection_limits import HttpParser

YOUNG_GENERATION_THRESHOLD = 10_000
"""Allocations (minus deallocations) of tracked objects between two collections of the youngest generation, in a
served process (Python's default is 700; the older generations keep theirs)."""

APP_FACTORY = "orc.http.serving:app_from_environment"
"""The import string each worker process builds its app from."""


def app_from_environment() -> ASGIApp:
    """The app for the ``ORC_`` environment; uvicorn calls this in every worker process (``factory=True``)."""
    from orc.http import create_app
    from orc.settings import Settings

    show_access_log()
    return log_requests(freeze_after_startup(create_app(Settings())))


def freeze_after_startup(app: ASGIApp) -> ASGIApp:
    """``app``, with the objects that exist once its lifespan has started moved out of the garbage collector's
    generations (``gc.freeze``), so that full collections in a busy server walk only the requests' objects, and
    the youngest generation collected every :data:`YOUNG_GENERATION_THRESHOLD` allocations.

    For a process that serves ``app`` and nothing else, such as ``orc serve``: frozen objects that later become
    cyclic garbage are never collected, which is right for what lives as long as the process and wrong for an
    app that an embedder starts and stops many times.
    """

    async def frozen(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def send_after_freezing(message: Message) -> None:
            if message["type"] == "lifespan.startup.complete":
                # Collect first: what start-up left as garbage is freed, not frozen.
                gc.collect()
                gc.freeze()
                gc.set_threshold(YOUNG_GENERATION_THRESHOLD, *gc.get_threshold()[1:])
            await send(message)

        await app(scope, receive, send_after_freezing)

    return frozen


ACCESS_LOG = logging.getLogger("orc.access")
"""One line per request, ``METHOD /path STATUS 12 ms`` (no query string: it may carry what must not be logged)."""


def log_requests(app: ASGIApp) -> ASGIApp:
    """``app``, logging one access line per HTTP request on :data:`ACCESS_LOG` once its response has started."""

    async def logged(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_noting_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, send_noting_status)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            ACCESS_LOG.info("%s %s %d %.0f ms", scope["method"], scope["path"], status, elapsed)

    return logged


def announce_on_startup(app: ASGIApp, url: str) -> ASGIApp:
    """``app``, printing ``orc listening on URL`` to stderr once its lifespan has started (so a failed start-up
    or a port in use never claims to listen)."""

    async def announcing(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def send_announcing(message: Message) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                print(f"orc listening on {url}", file=sys.stderr, flush=True)

        await app(scope, receive, send_announcing)

    return announcing


def show_access_log() -> None:
    """Send :data:`ACCESS_LOG` to stderr whatever the root log level (``orc serve`` runs at WARNING by default)."""
    if not ACCESS_LOG.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        ACCESS_LOG.addHandler(handler)
    ACCESS_LOG.setLevel(logging.INFO)
    ACCESS_LOG.propagate = False


def listening_url(host: str, port: int) -> str:
    """The URL a server bound to ``host:port`` is reached at."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def tcp_listener(host: str, port: int) -> socket.socket:
    """A socket to listen on, bound like uvicorn's ``Config.bind_socket`` but with ``proto=IPPROTO_TCP``.

    Accepted sockets inherit ``proto``, so asyncio sets ``TCP_NODELAY`` on them (see the module docstring).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


STARTUP_FAILURE = 3
"""The exit status when the app fails to start, as ``uvicorn.run`` exits."""

WORKER_HEALTHCHECK_SECONDS = 60
"""How long the supervisor waits for a worker to answer its ping before it kills and replaces it. uvicorn's 5 s
default kills workers that are only slow: a new worker answers once its interpreter has started, which on a host
whose cores are busy takes longer than that, so the replacement is killed too and the server never answers."""


def serve(
    app: Any,
    *,
    host: str,
    port: int,
    workers: int = 1,
    log_level: str = "info",
    http: HttpParser = "auto",
    **options: Any,
) -> None:
    """Serve ``app`` (an ASGI app, or an import string of a factory such as :data:`APP_FACTORY`) until SIGTERM or
    SIGINT. Several ``workers`` need the import string: each process builds its own app. ``http`` picks the HTTP
    parser; both bound request heads (:mod:`orc.http.connection_limits`).

    An app object is served through :func:`freeze_after_startup`; a factory applies it itself, as
    :func:`app_from_environment` does.
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from orc.http.connection_limits import server_options

    if workers < 1:
        raise ValueError("workers must be at least 1")
    options = {**server_options(http), **options}
    if workers > 1 and not isinstance(app, str):
        raise ValueError("several workers need an import string: each worker process builds its own app")
    url = listening_url(host, port)
    # Bound before anything starts: a port in use fails here (OSError), before the app's start-up announces it.
    sockets = [tcp_listener(host, port)]
    show_access_log()
    if workers == 1:
        if not isinstance(app, str):
            app = announce_on_startup(log_requests(freeze_after_startup(app)), url)
        single = uvicorn.Config(app, host=host, port=port, log_level=log_level, factory=isinstance(app, str), **options)
        server = uvicorn.Server(single)
        with contextlib.suppress(KeyboardInterrupt):
            server.run(sockets=sockets)
        if not server.started:
            sys.exit(STARTUP_FAILURE)
        return
    config = uvicorn.Config(
        app,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        lifespan="on",
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
        **options,
    )
    # The socket is bound: the workers share it, so the port is ours from here on.
    print(f"orc listening on {url} ({workers} workers)", file=sys.stderr, flush=True)
    Multiprocess(config, sockets=sockets).run()
