"""``orc worker``: consume the document processing and digest queues (for container hosting of ``ORC_JOBS=queue``).

On Azure Functions the queue-triggered functions of ``function_app.py`` do the same work; this command is for
hosts without queue triggers (Container Apps, a VM). Any number of workers may run against the same queues:
each job's claim in the catalog keeps two of them from completing one job twice.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from typing import TYPE_CHECKING

from orc.errors import ConfigurationError
from orc.resources import QUEUES

WORKER_CONCURRENCY = 2
"""Jobs one ``orc worker`` runs at once unless ``--concurrency`` says otherwise."""

if TYPE_CHECKING:  # `orc --help` builds this command's parser and must not load the settings machinery
    from orc.settings import Settings


def add_worker_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``worker`` subcommand."""
    worker = commands.add_parser("worker", help="process queued document and digest jobs (ORC_JOBS=queue)")
    worker.add_argument("--concurrency", type=int, default=None, help=f"jobs at once (default {WORKER_CONCURRENCY})")


async def run_worker(settings: Settings, concurrency: int | None = None, stop: asyncio.Event | None = None) -> int:
    """Run until SIGINT/SIGTERM (or ``stop``); jobs left unfinished are delivered again to another worker."""
    if settings.jobs != "queue":
        raise ConfigurationError("orc worker needs ORC_JOBS=queue (and ORC_QUEUE_CONNECTION_STRING or _ACCOUNT_URL)")
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # Windows; not the main thread
            loop.add_signal_handler(signum, stop.set)
    # Imported here: `orc --help` must not load the backends.
    from orc.composition import build_runtime
    from orc.composition.tuning import TUNED
    from orc.documents.intake.recovery import sweep_interrupted_documents

    concurrency = concurrency or WORKER_CONCURRENCY
    async with build_runtime(settings) as services:
        services.warm()
        print(
            f"orc worker: consuming {' and '.join(QUEUES)}, "
            f"{concurrency} job{'s' if concurrency != 1 else ''} at a time",
            file=sys.stderr,
            flush=True,
        )
        # Uploads an instance left mid-way never reached the queue: the worker finds them by their lapsed leases.
        recovering = asyncio.create_task(
            sweep_interrupted_documents(services.documents.recovery, TUNED.processing_sweep_seconds)
        )
        try:
            await services.documents.jobs.run(stop, concurrency=concurrency)
        finally:
            recovering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await recovering
    return 0
