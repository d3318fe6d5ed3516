"""uvicorn in a thread on a loopback socket, with ``orc serve``'s connection options and a given HTTP protocol."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from orc.http.connection_limits import server_options

START_SECONDS = 120.0
"""Bounds a server that never starts (the loop ends as soon as it has): a busy machine only makes it slower."""


@contextlib.contextmanager
def serving(app: ASGIApp, protocol: type[Any]) -> Iterator[int]:
    """Serve ``app`` with ``protocol`` until the block ends; yield the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    options = {**server_options(), "http": protocol}
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", **options))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)  # poll interval, not a wait for readiness
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=START_SECONDS)
        sock.close()
