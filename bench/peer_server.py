"""``python -m bench.peer_server``: one server process of the side-by-side benchmark, on 127.0.0.1 only.

    python -m bench.peer_server --app orc   --port P --latency 0.5 --home DIR
    python -m bench.peer_server --app peer  --port P --latency 0.5 --mcp-url URL --variant session --home DIR
    python -m bench.peer_server --app mcp   --port P --docs DIR
    python -m bench.peer_server --app floor --port P

``orc`` is orc's HTTP app as ``orc serve`` serves it (``create_app`` on embedded storage, frozen after start-up,
one uvicorn worker), as :mod:`bench.server` builds it but with :func:`bench.peer_model.bench_model`, the model
the peer gets too. ``peer`` is :func:`bench.peer_app.create_peer_app`, ``floor`` its fixed-JSON floor, ``mcp``
the FastMCP document server (``mcp.run(transport="streamable-http")``). Each runs in a process of its own, so
that the load generator in the bench process does not share their event loops. Real model requests are
forbidden in every one of them.

:func:`serve_all` starts several at once and stops them all (SIGTERM, then SIGKILL to the process group after a
bounded wait).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import uvicorn
from starlette.types import ASGIApp

from bench.common import REPO, SERVER_START_TIMEOUT, SERVER_STOP_TIMEOUT, bench_settings, free_port
from bench.peer_app import PEER_VARIANTS, PeerVariant, create_floor_app, create_peer_app
from bench.peer_mcp import create_mcp
from bench.peer_model import bench_model
from bench.server import ENV_LOOP
from orc.http import create_app
from orc.http.serving import freeze_after_startup
from orc.models.guard import forbid_model_requests, is_loopback_host

APPS = ("orc", "peer", "floor", "mcp")
HEALTH = {"orc": "/api/health", "peer": "/health", "floor": "/health"}
"""Where each app says it is ready; the MCP server is ready when it answers HTTP at all."""


def build_app(args: argparse.Namespace) -> ASGIApp:
    """The ASGI app ``args`` ask for (not the MCP server, which FastMCP runs itself)."""
    if args.app == "orc":
        return freeze_after_startup(create_app(bench_settings(args.home), model=bench_model(args.latency)))
    if args.app == "peer":
        variant: PeerVariant = args.variant
        return create_peer_app(bench_model(args.latency), args.mcp_url, variant, args.home / "checkpoints.sqlite")
    return create_floor_app()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m bench.peer_server", description=__doc__.split("\n")[0])
    parser.add_argument("--app", choices=APPS, required=True)
    parser.add_argument("--host", default="127.0.0.1", help="a loopback address only (127.0.0.1)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per scripted model call (0)")
    parser.add_argument("--home", type=Path, help="data folder (orc's ORC_HOME, the peer's checkpoints)")
    parser.add_argument("--mcp-url", help="the peer's MCP server, e.g. http://127.0.0.1:8770/mcp")
    parser.add_argument("--variant", choices=PEER_VARIANTS, default="per-call", help="the peer's MCP sessions")
    parser.add_argument("--docs", type=Path, help="the MCP server's document folder")
    parser.add_argument("--loop", choices=("auto", "uvloop", "asyncio"), default=os.environ.get(ENV_LOOP, "auto"))
    args = parser.parse_args(argv)
    if not is_loopback_host(args.host):
        parser.error("the benchmark servers listen on loopback addresses only")
    needs = {"orc": ["home"], "peer": ["home", "mcp_url"], "mcp": ["docs"], "floor": []}[args.app]
    for name in needs:
        if getattr(args, name) is None:
            parser.error(f"--app {args.app} needs --{name.replace('_', '-')}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT."""
    args = parse_args(argv)
    forbid_model_requests()
    if args.app == "mcp":
        create_mcp(args.docs, host=args.host, port=args.port).run(transport="streamable-http")
        return 0
    if args.home is not None:
        args.home.mkdir(parents=True, exist_ok=True)
    config = uvicorn.Config(
        build_app(args),
        host=args.host,
        port=args.port,
        loop=args.loop,
        lifespan="on",
        access_log=False,
        log_level="warning",
        backlog=2048,
        timeout_keep_alive=30,
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    server.run()
    return 0 if server.started else 3


# -- starting and stopping them from the bench process ---------------------------------------------------------


@dataclass(frozen=True)
class ServerSpec:
    """One server to start: ``app`` with its ``python -m bench.peer_server`` options (``--port`` is added)."""

    label: str
    app: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunningServer:
    """A started server."""

    label: str
    app: str
    base_url: str
    pid: int
    log: Path


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=SERVER_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        # Started in a session of its own: its process group is the server alone.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=SERVER_STOP_TIMEOUT)


def _tail(log: Path, limit: int = 2000) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-limit:]
    return ""


async def _wait_ready(server: RunningServer, process: subprocess.Popen[bytes], deadline: float) -> None:
    loop = asyncio.get_running_loop()
    path = HEALTH.get(server.app, "/mcp")
    async with httpx.AsyncClient(base_url=server.base_url, timeout=2.0, trust_env=False) as probe:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{server.label} exited with {process.returncode}:\n{_tail(server.log)}")
            if loop.time() > deadline:
                raise TimeoutError(f"{server.label} did not become ready on {server.base_url}:\n{_tail(server.log)}")
            with contextlib.suppress(httpx.HTTPError):
                response = await probe.get(path)
                if server.app == "mcp" or response.status_code == 200:
                    return
            await asyncio.sleep(0.05)  # poll interval, not a wait for readiness


def _spawn(spec: ServerSpec, folder: Path) -> tuple[RunningServer, subprocess.Popen[bytes]]:
    """Start one server in a session of its own on a free port; its output goes to a log file in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # Import orc and bench from the tree this bench/ sits in, as bench.common's server processes do.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    port = free_port()
    log = folder / f"{spec.label.replace('/', '-')}.log"
    command = [sys.executable, "-m", "bench.peer_server", "--app", spec.app, "--port", str(port), *spec.options]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return RunningServer(spec.label, spec.app, f"http://127.0.0.1:{port}", process.pid, log), process


@asynccontextmanager
async def serve_all(specs: Sequence[ServerSpec], folder: Path) -> AsyncIterator[dict[str, RunningServer]]:
    """Start every server at once (each on a free port, its output in a log file in ``folder``); yield them by
    label once all are ready; stop them all on exit."""
    started: list[tuple[RunningServer, subprocess.Popen[bytes]]] = []
    try:
        for spec in specs:
            started.append(_spawn(spec, folder))
        deadline = asyncio.get_running_loop().time() + SERVER_START_TIMEOUT * 2
        await asyncio.gather(*(_wait_ready(server, process, deadline) for server, process in started))
        yield {server.label: server for server, _ in started}
    finally:
        await asyncio.gather(*(asyncio.to_thread(_stop, process) for _, process in started))


if __name__ == "__main__":
    sys.exit(main())
