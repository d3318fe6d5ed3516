"""``python -m bench.server``: the orc app with the benchmark's scripted model, served by uvicorn on 127.0.0.1.

The benchmarks start this in a separate process, so that the load generator (the httpx client in the bench
process) does not share the server's event loop and core::

    python -m bench.server --port 8765 --latency 0.1 --home /tmp/orc-bench/home --storage embedded [--workers 2]

The app is built by :func:`app_from_env`, a module-level factory that reads its configuration from environment
variables (``ORC_BENCH_*``): uvicorn needs an import string to run more than one worker process, and each worker
calls the factory itself. With ``--workers 2`` and embedded storage, both workers open the same SQLite files in
``--home`` (WAL mode) and the same blob folder; each worker has its own document_chat file-id cache and its
own MCP session. Memory storage cannot be shared between processes, so it is refused with more than one worker.

**TCP_NODELAY with several workers.** ``uvicorn.run(..., workers=N)`` binds the listening socket without
``IPPROTO_TCP``, and every response then waits about 40 ms for a delayed ACK (uvicorn issue #3149). With
``--workers`` > 1 this module binds it with :func:`orc.http.serving.tcp_listener`, as ``orc serve --workers``
does; ``--stock-socket`` keeps uvicorn's socket, to reproduce the delay.

Only loopback addresses are served. Real model requests are forbidden in every worker.

With ``ORC_BENCH_PROFILE=<folder>`` the app also answers ``POST /bench/profile/start`` and
``POST /bench/profile/stop``: cProfile of the worker's event-loop thread between the two, written as a pstats
file to that folder (the response names it). Bench instrumentation only; the product is untouched.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.supervisors import Multiprocess

from bench.common import StorageKind, bench_settings, scripted_model, stores_for
from orc.http import create_app
from orc.http.serving import freeze_after_startup, tcp_listener
from orc.models.guard import forbid_model_requests, is_loopback_host

ENV_HOME = "ORC_BENCH_HOME"
ENV_LATENCY = "ORC_BENCH_LATENCY"
ENV_STORAGE = "ORC_BENCH_STORAGE"
ENV_PROFILE = "ORC_BENCH_PROFILE"
ENV_LOOP = "ORC_BENCH_LOOP"
"""The event loop ``python -m bench`` runs on; its server processes use the same one (``--loop``)."""
PROFILE_START = "/bench/profile/start"
PROFILE_STOP = "/bench/profile/stop"


class ProfilingSwitch:
    """Wraps an ASGI app: ``POST /bench/profile/start|stop`` toggles cProfile and writes the stats file."""

    def __init__(self, app: ASGIApp, folder: Path) -> None:
        self.app = app
        self.folder = folder
        self.profiler: cProfile.Profile | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle the two switch paths; pass everything else (lifespan included) to the app."""
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path not in (PROFILE_START, PROFILE_STOP):
            await self.app(scope, receive, send)
            return
        body: dict[str, object]
        if path == PROFILE_START:
            self.profiler = cProfile.Profile()
            self.profiler.enable()
            body = {"profiling": True, "pid": os.getpid()}
        else:
            stats_file = ""
            if self.profiler is not None:
                self.profiler.disable()
                self.folder.mkdir(parents=True, exist_ok=True)
                stats_file = str(self.folder / f"server-{os.getpid()}.pstats")
                self.profiler.dump_stats(stats_file)
                self.profiler = None
            body = {"profiling": False, "pid": os.getpid(), "stats_file": stats_file}
        payload = json.dumps(body).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


def app_from_env() -> ASGIApp:
    """The app for this worker, configured by ``ORC_BENCH_HOME``, ``ORC_BENCH_LATENCY`` and ``ORC_BENCH_STORAGE``.

    Called by uvicorn in each worker process (``factory=True``).
    """
    forbid_model_requests()  # scripted models only; never a real endpoint
    home = Path(os.environ[ENV_HOME])
    latency = float(os.environ.get(ENV_LATENCY, "0"))
    storage = os.environ.get(ENV_STORAGE, "embedded")
    if storage not in ("embedded", "memory"):
        raise ValueError(f"{ENV_STORAGE} must be embedded or memory, not {storage!r}")
    kind: StorageKind = "memory" if storage == "memory" else "embedded"
    # Frozen after start-up, as `orc serve` serves it.
    app = freeze_after_startup(create_app(bench_settings(home), model=scripted_model(latency), stores=stores_for(kind)))
    profile_folder = os.environ.get(ENV_PROFILE)
    return ProfilingSwitch(app, Path(profile_folder)) if profile_folder else app


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.server", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="a loopback address only (127.0.0.1)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per scripted model call (0)")
    parser.add_argument("--home", type=Path, required=True, help="ORC_HOME of the server (embedded data)")
    parser.add_argument("--storage", choices=("embedded", "memory"), default="embedded")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes (1)")
    parser.add_argument("--profile-dir", type=Path, help="enable the /bench/profile switch, writing here")
    parser.add_argument(
        "--loop",
        choices=("auto", "uvloop", "asyncio"),
        default=os.environ.get(ENV_LOOP, "auto"),
        help="uvicorn's event loop (auto = uvloop where installed, as `orc serve`; default: $ORC_BENCH_LOOP or auto)",
    )
    parser.add_argument(
        "--stock-socket",
        action="store_true",
        help="with --workers > 1, let uvicorn bind the socket (Nagle stays on: about +40 ms per response)",
    )
    args = parser.parse_args(argv)
    if not is_loopback_host(args.host):
        parser.error("the benchmark server listens on loopback addresses only")
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.workers > 1 and args.storage == "memory":
        parser.error("memory storage is per process: more than one worker needs --storage embedded")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT; uvicorn shuts the app's lifespan down on either."""
    args = parse_args(argv)
    os.environ[ENV_HOME] = str(args.home)
    os.environ[ENV_LATENCY] = str(args.latency)
    os.environ[ENV_STORAGE] = args.storage
    if args.profile_dir is not None:
        os.environ[ENV_PROFILE] = str(args.profile_dir)
    args.home.mkdir(parents=True, exist_ok=True)
    config = uvicorn.Config(
        "bench.server:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        loop=args.loop,
        workers=args.workers,
        lifespan="on",
        access_log=False,
        log_level="warning",
        backlog=2048,
        timeout_keep_alive=30,
        timeout_graceful_shutdown=5,
    )
    if args.workers == 1:
        config.load_app()
        server = uvicorn.Server(config)
        server.run()
        return 0 if server.started else 3
    if args.stock_socket:
        Multiprocess(config, sockets=[config.bind_socket()]).run()
    else:
        Multiprocess(config, sockets=[tcp_listener(args.host, args.port)]).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
