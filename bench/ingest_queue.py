"""Target: 200 documents of 20 pages uploaded at once are all ``ready`` with 2 queue workers in ≤ 0.6× the time of
1 worker, with no job processed twice to completion.

Set-up: ``ORC_JOBS=queue`` on Azurite's queue service (started here on a free loopback port, like the tests do),
embedded storage (SQLite file + local folder) in one temporary ``ORC_HOME`` shared by every process. For each
worker count, ``N`` ``orc worker`` processes are started (separate processes: PDF parsing is CPU-bound Python,
one process uses one core) and waited for; then this process uploads the 200 PDFs in one call
(``context_documents.add``, which returns once every job is in the queue) and waits until all are ``ready``
(watching the workers' logs, then reading the catalog once). Timed: from the upload call to the last ``ready``.
Each worker logs one line per handled job (document id and outcome); a document with more than one
``ready``/``failed`` line would be a job completed twice.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from pathlib import Path
from tempfile import TemporaryDirectory

from bench.common import BenchResult, Check
from bench.documents_common import exit_with, standalone
from orc.composition import build_runtime
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from tests.documents.pdf_factory import make_pdf
from tests.emulators import AZURITE_ACCOUNT, AZURITE_KEY, azurite_queue_command, run_emulator

TARGET_RATIO = 0.6
DEADLINE_SECONDS = 900.0
ORG = ContextRef("organization", "default")
WORKER = "import sys; from orc.cli import main; sys.exit(main(sys.argv[1:]))"


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])


def pdfs(count: int, pages: int) -> list[Upload]:
    """``count`` different ``pages``-page PDFs (about 40 lines of text a page)."""
    made = []
    for n in range(count):
        content = [
            [f"Document {n} page {page} line {line}: unit {page * line} of site {n} reports normal operation."
             for line in range(40)]
            for page in range(1, pages + 1)
        ]  # fmt: skip
        made.append(Upload(f"report-{n:03}.pdf", make_pdf(content)))
    return made


def environment(home: Path, connection_string: str) -> dict[str, str]:
    """The ``ORC_`` settings every process of one run shares."""
    return {"ORC_HOME": str(home), "ORC_JOBS": "queue", "ORC_QUEUE_CONNECTION_STRING": connection_string}


async def start_worker(env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    """One ``orc worker`` process, returned once it consumes the queues."""
    import os

    sink = log.open("wb")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WORKER, "--log-level", "INFO", "worker",
        env={**os.environ, **env}, stdout=asyncio.subprocess.DEVNULL, stderr=sink,
    )  # fmt: skip
    async with asyncio.timeout(60):
        while b"orc worker: consuming" not in await asyncio.to_thread(log.read_bytes):
            if process.returncode is not None:
                raise RuntimeError(f"the worker exited: {(await asyncio.to_thread(log.read_text))[-2000:]}")
            await asyncio.sleep(0.05)
    return process


def finished_documents(logs: list[Path]) -> set[str]:
    """The documents whose job a worker has logged as ended (``ready`` or ``failed``)."""
    ended = set()
    for log in logs:
        for line in log.read_text().splitlines():
            if "job process " in line and line.endswith((": ready", ": failed")):
                ended.add(line.split("job process ")[1].split(":")[0])
    return ended


async def one_run(workers: int, uploads: list[Upload], connection_string: str, tmp: Path) -> dict[str, object]:
    """Upload everything with ``workers`` workers running; time until all are ready."""
    home = tmp / f"home-{workers}"
    env = environment(home, connection_string)
    settings = Settings(home=home, jobs="queue", queue_connection_string=connection_string)
    home.mkdir(parents=True)
    logs = [tmp / f"worker-{workers}-{i}.log" for i in range(workers)]
    async with build_runtime(settings) as web:
        # Create the database and queues before the workers open them.
        await web.foundation.context_documents.documents(LOCAL_PRINCIPAL, ORG)
        processes = [await start_worker(env, log) for log in logs]
        try:
            started = time.perf_counter()
            await web.foundation.context_documents.add(LOCAL_PRINCIPAL, ORG, uploads, wait_seconds=0)
            enqueued = time.perf_counter()
            async with asyncio.timeout(DEADLINE_SECONDS):
                while True:
                    # The workers' logs say when each job ends: reading them every 0.1 s costs next to nothing,
                    # where listing 200 records twice a second took CPU the workers need (and made the 2-worker
                    # run look slower than it is). The catalog is read once the logs count every document.
                    if len(await asyncio.to_thread(finished_documents, logs)) >= len(uploads):
                        docs = await web.foundation.context_documents.documents(LOCAL_PRINCIPAL, ORG)
                        if len(docs) == len(uploads) and all(d.status in ("ready", "failed") for d in docs):
                            break
                    await asyncio.sleep(0.1)
            done = time.perf_counter()
        finally:
            for process in processes:
                process.terminate()
            await asyncio.gather(*(process.wait() for process in processes))
    completions: Counter[str] = Counter()
    per_worker = []
    for log in logs:
        lines = [line for line in log.read_text().splitlines() if "job process " in line]
        ends = [line for line in lines if line.endswith((": ready", ": failed"))]
        finished = [line.split("job process ")[1].split(":")[0] for line in ends]
        completions.update(finished)
        per_worker.append(len(finished))
    return {
        "workers": workers,
        "documents": len(uploads),
        "ready": sum(1 for d in docs if d.status == "ready"),
        "upload_s": round(enqueued - started, 2),
        "all_ready_s": round(done - started, 2),
        "completed_per_worker": per_worker,
        "completed_twice": sum(1 for count in completions.values() if count > 1),
    }


async def run(args: argparse.Namespace) -> BenchResult:
    """One run per worker count, on fresh storage and queues each."""
    result = BenchResult(name="ingest_queue")
    uploads = pdfs(args.documents, args.pages)
    with TemporaryDirectory(prefix="orc-bench-queue-") as tmp_name:
        tmp = Path(tmp_name)
        for workers in args.workers:
            # Each run on an Azurite of its own: the queues' names are fixed, and no job may cross runs.
            azurite = azurite_queue_command(tmp / f"azurite-{workers}")
            with run_emulator("azurite-queue", azurite, tls=False, log_dir=tmp) as port:
                connection_string = (
                    f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
                    f"QueueEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
                )
                result.rows.append(await one_run(workers, uploads, connection_string, tmp))
    times = {row["workers"]: row["all_ready_s"] for row in result.rows}
    if 1 in times and 2 in times:
        ratio = round(float(times[2]) / float(times[1]), 3)  # type: ignore[arg-type]
        result.checks.append(Check("all ready with 2 workers / with 1 worker", ratio, TARGET_RATIO, unit="×"))
    twice = sum(int(row["completed_twice"]) for row in result.rows)  # type: ignore[call-overload]
    result.checks.append(Check("jobs completed twice", twice, 0, unit="jobs"))
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
