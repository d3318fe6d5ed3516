"""Where every document is parsed: worker processes with a memory cap and a deadline, shared fairly across
organizations, so one hostile or slow document cannot take the serving process or hold anyone else's.

The size bounds of :mod:`orc.documents.parsing.limits` stop the bombs they can see coming (a zip's declared sizes, the
text a parser returned). What they cannot see — a PDF stream that inflates to gigabytes inside the parser, a
parser's own blow-up, a parse that never ends — is contained here: the parsing runs in a small pool of worker
processes, each under an address-space limit (``ORC_EXTRACTION_MEMORY_MB``) and each document under a deadline
(``ORC_EXTRACTION_SECONDS``). A worker that hits either fails that one document (``extraction_memory``,
``extraction_timeout``) and is replaced; the serving process's memory and event loop are untouched. The workers
are handed out by :class:`~orc.documents.parsing.fair_turns.FairTurns`: one organization's backlog waits behind its own
documents, not in front of another organization's; and one organization holds at most ``workers`` of them, so
while it keeps them all busy (slow documents, each up to the deadline) one more worker, :data:`SPARE_WORKERS`,
parses the other organizations' documents at once: theirs are never delayed beyond one deadline by it.

``ORC_EXTRACTION_PROCESSES=0`` keeps extraction in threads of the serving process (what tests and tiny set-ups
may prefer: no worker start-up); the limits, the fairness and the deadline still hold there, but a thread past
its deadline cannot be stopped: its document fails at the deadline and the thread finishes in the background.

Small plain-text documents (text, Markdown, CSV, JSON, HTML up to :data:`IN_PROCESS_MAX_BYTES`) are parsed in a
thread of the serving process even with a pool: they cannot decompress, and their parse costs less than the trip
to a worker and back.

Workers are started with ``spawn``, which imports the program's main module again in each worker. A program
that does its work at import time (no ``if __name__ == "__main__":`` guard) would run again there, so such a
program is detected before any worker starts (:func:`unguarded_main`) and its documents are parsed in threads,
with one warning.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib
import logging
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from orc.documents.parsing.extraction import detect_media_type, extract
from orc.documents.parsing.fair_turns import FairTurns
from orc.documents.parsing.limits import ExtractionLimits
from orc.errors import ExtractionError, OrcError, UnsupportedMediaType
from orc.extracted import CSV, HTML, JSON, MARKDOWN, TEXT, ExtractedDocument

__all__ = [
    "IN_PROCESS_MAX_BYTES",
    "ExtractionPool",
    "parses_in_process",
    "unguarded_main",
]

IN_PROCESS_MAX_BYTES = 128 * 1024
"""Plain-text documents up to this size are parsed in the serving process (cheap, with bounded memory)."""
THREADS = 2
"""Documents parsed at once when the pool runs in threads."""
SPARE_WORKERS = 1
"""Workers (or threads) beyond ``workers`` that only organizations other than the busiest one may use."""

_PLAIN_TEXT = frozenset({TEXT, MARKDOWN, CSV, JSON, HTML})
_KILL = getattr(signal, "SIGKILL", signal.SIGTERM)

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


class WorkerInitializer(Protocol):
    """Runs first in every worker process, with the worker's memory cap in bytes."""

    def __call__(self, memory_bytes: int, /) -> None: ...


def parses_in_process(data: bytes, filename: str, content_type: str | None) -> bool:
    """Whether ``data`` is light enough to parse in the serving process: plain text of at most
    :data:`IN_PROCESS_MAX_BYTES`. PDFs and office files always go to a worker, whatever their size: a small
    compressed file can inflate to gigabytes."""
    if len(data) > IN_PROCESS_MAX_BYTES:
        return False
    try:
        return detect_media_type(data, filename, content_type) in _PLAIN_TEXT
    except UnsupportedMediaType:
        return True  # refused at once by extract(), wherever it runs


def unguarded_main() -> str | None:
    """The program's main module when a ``spawn``ed worker would run its code again, else None.

    ``spawn`` re-imports the main module in each worker (as ``__mp_main__``), by path or by module name, the way
    :mod:`multiprocessing.spawn` prepares a child; an interactive session, ``python -c`` and a package's
    ``__main__`` are not re-imported. The module is safe when its top level only imports, defines, assigns or
    runs code under ``if __name__ == "__main__":``; any other statement (a bare call such as
    ``asyncio.run(main())``) would run again in the worker. A source that cannot be read counts as unguarded.
    """
    main = sys.modules.get("__main__")
    if main is None:
        return None
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    if name is not None:
        if name == "__main__" or name.endswith(".__main__"):
            return None
        path = getattr(spec, "origin", None)
    else:
        path = getattr(main, "__file__", None)
    if not path:
        return None
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return str(path)
    return None if all(_runs_nothing(node) for node in tree.body) else str(path)


_DEFINITIONS = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Pass,
    ast.Assign,
    ast.AnnAssign,
)


def _runs_nothing(node: ast.stmt) -> bool:
    """Whether a top-level statement is safe to run again in a worker."""
    if isinstance(node, _DEFINITIONS):
        return True
    if isinstance(node, ast.Expr):
        return isinstance(node.value, ast.Constant)  # a docstring
    if isinstance(node, ast.If):
        return _is_main_guard(node.test) or (
            all(_runs_nothing(child) for child in node.body) and all(_runs_nothing(child) for child in node.orelse)
        )
    if isinstance(node, ast.Try):
        parts = [*node.body, *node.orelse, *node.finalbody, *(s for h in node.handlers for s in h.body)]
        return all(_runs_nothing(child) for child in parts)
    return False


def _is_main_guard(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [side.id for side in sides if isinstance(side, ast.Name)]
    values = [side.value for side in sides if isinstance(side, ast.Constant)]
    return names == ["__name__"] and values == ["__main__"]


WORKER_NICENESS = 10
"""How much lower a worker's scheduling priority is than the serving process's: parsing is background work, so on
a busy machine the server's requests (another organization's turns) get the CPU first."""


PARSERS = ("pypdf", "pypdfium2", "docx")
"""The parsing libraries of the usual documents (PDF, DOCX), imported by a worker as it starts, before its first
document's deadline runs: on a busy machine their imports alone took seconds, charged to a worker's first document
(a spare worker's included). The others (spreadsheets, slides, HTML) are imported by their first document."""


def _limit_memory(memory_bytes: int) -> None:
    """Worker initializer: cap the worker's address space, lower its priority (where the platform allows), keep
    the parsers' log lines out of the server's terminal and import the parsers."""
    # A worker has no logging configured, so Python's last-resort handler would print a parser's complaints
    # ("EOF marker not found") bare on the server's terminal; the document's status already says why it failed.
    logging.getLogger().addHandler(logging.NullHandler())
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):  # Windows, or a hard limit already lower
        logger.debug("could not limit the extraction worker's memory", exc_info=True)
    with contextlib.suppress(AttributeError, OSError):  # no os.nice on Windows
        os.nice(WORKER_NICENESS)
    for parser in PARSERS:
        with contextlib.suppress(ImportError):  # an optional parser that is not installed is imported by nobody
            importlib.import_module(parser)


def _probe() -> int:
    """The first job of a new worker: proves it starts, and names the process to stop at a deadline."""
    return os.getpid()


def _extract_in_worker(data: bytes, filename: str, content_type: str | None, limits: ExtractionLimits) -> Any:
    try:
        return extract(data, filename, content_type, limits)
    except MemoryError:
        # Raised inside the worker when the cap is hit: the worker itself is fine once the parse is dropped.
        raise _over_memory(filename) from None


def _over_memory(filename: str) -> ExtractionError:
    return ExtractionError(
        f"{filename!r} needs more memory to extract than one document may use", code="extraction_memory"
    )


@dataclass(slots=True)
class _Worker:
    """One worker process, in an executor of its own so that it can be stopped alone."""

    executor: ProcessPoolExecutor
    pid: int

    def stop(self) -> None:
        with contextlib.suppress(OSError):  # already gone
            os.kill(self.pid, _KILL)
        self.executor.shutdown(wait=False, cancel_futures=True)


class ExtractionPool:
    """Parses documents under ``limits``: in ``workers`` processes (each capped at ``memory_bytes``, started on
    first use or ahead by :meth:`warm`; one more for other organizations while one organization keeps them all
    busy), or in threads when ``workers`` is 0; each document within ``deadline_seconds``; fair across
    organizations.

    When the workers cannot start (a program without a main guard, a platform that refuses them), documents are
    parsed in threads from then on, with one warning, instead of every upload failing.
    """

    def __init__(
        self,
        workers: int,
        memory_bytes: int,
        *,
        limits: ExtractionLimits,
        deadline_seconds: float,
        initializer: WorkerInitializer = _limit_memory,
    ) -> None:
        if workers < 0 or deadline_seconds <= 0:
            raise ValueError("an extraction pool needs a non-negative worker count and a positive deadline")
        self._workers = workers
        self._memory_bytes = memory_bytes
        self._initializer = initializer
        self._limits = limits
        self._deadline = deadline_seconds
        self._idle: list[_Worker] = []
        self._live: set[int] = set()  # pids of the workers started and not stopped
        self._in_threads = workers == 0
        self._warned = False
        self._turns = FairTurns(workers or THREADS, spare=SPARE_WORKERS)
        self._warming: asyncio.Task[None] | None = None

    @property
    def limits(self) -> ExtractionLimits:
        """The bounds every document is parsed under."""
        return self._limits

    @property
    def in_threads(self) -> bool:
        """Whether extraction runs in threads of this process (configured so, or the workers could not start)."""
        return self._in_threads

    def warm(self) -> asyncio.Task[None] | None:
        """Start one worker in the background, so that the first document after start-up does not wait for a
        process to start and import the parsers (about a second); the start, to await if one wants to. Nothing
        (None) when documents are parsed in threads or a worker is already there; a serving process calls it once
        it is up."""
        if self._warming is None and not (self._in_threads or self._idle or self._live):
            self._warming = asyncio.create_task(self._warm(), name="extraction-warm")
        return self._warming

    async def _warm(self) -> None:
        try:
            worker = await self._start()
        except Exception as exc:  # the first document tries again, and says what went wrong if it does again
            logger.warning("could not start an extraction worker ahead of the first document: %s", type(exc).__name__)
            return
        if worker is not None:
            self._idle.append(worker)

    async def extract(
        self, data: bytes, filename: str, content_type: str | None, *, organization: str = ""
    ) -> ExtractedDocument:
        """Parse ``data`` in ``organization``'s turn; :class:`ExtractionError` when it is over a bound
        (``decompression_limit``, ``text_limit``, ``extraction_memory``) or its deadline (``extraction_timeout``)."""
        if parses_in_process(data, filename, content_type):
            return await asyncio.to_thread(extract, data, filename, content_type, self._limits)
        overdue = ExtractionError(
            f"{filename!r} took longer than {self._deadline:g} s to read; simplify or split it",
            code="extraction_timeout",
        )
        result: ExtractedDocument = await self.run(
            _extract_in_worker,
            data,
            filename,
            content_type,
            self._limits,
            organization=organization,
            overdue=overdue,
            over_memory=_over_memory(filename),
        )
        return result

    async def run(
        self,
        function: Callable[..., _T],
        *args: Any,
        organization: str,
        overdue: OrcError,
        over_memory: OrcError,
    ) -> _T:
        """Run the CPU-bound, picklable ``function(*args)`` in a worker, in ``organization``'s turn, within the
        deadline: what parses documents, and what else must not load the serving process (PDF exports).
        ``overdue`` is raised past the deadline (the worker is replaced), ``over_memory`` when the worker dies."""
        async with self._turns.turn(organization):
            worker = await self._take()
            if worker is None:
                try:
                    return await asyncio.wait_for(asyncio.to_thread(function, *args), self._deadline)
                except TimeoutError:
                    raise overdue from None
            return await self._in_worker(worker, function, args, overdue, over_memory)

    async def _in_worker(
        self,
        worker: _Worker,
        function: Callable[..., _T],
        args: tuple[Any, ...],
        overdue: OrcError,
        over_memory: OrcError,
    ) -> _T:
        loop = asyncio.get_running_loop()
        running = loop.run_in_executor(worker.executor, function, *args)
        try:
            result = await asyncio.wait_for(running, self._deadline)
        except TimeoutError:
            self._drop(worker)  # still running: stopped, and the next job gets a fresh worker
            raise overdue from None
        except BrokenProcessPool:
            # The worker died on this job (killed by the kernel, or the cap hit where Python could not raise):
            # the job fails, and the next one gets a fresh worker.
            self._drop(worker)
            raise over_memory from None
        except BaseException:
            self._drop(worker)  # cancelled (shutdown, a request given up): the job must not outlive it
            raise
        self._idle.append(worker)
        return result

    async def _take(self) -> _Worker | None:
        """An idle worker (started if none is), or None when documents are parsed in threads."""
        if self._warming is not None:
            # The warm start's worker is this job's (waited for, never cancelled by this caller giving up).
            await asyncio.wait([self._warming])
            self._warming = None
        if self._in_threads:
            return None
        if self._idle:
            return self._idle.pop()
        return await self._start()

    async def _start(self) -> _Worker | None:
        """A new worker, or None when workers cannot start (documents are parsed in threads from then on)."""
        main = unguarded_main()
        if main is not None:
            self._fall_back(f'the program {main!r} runs code outside `if __name__ == "__main__":`')
            return None
        executor = ProcessPoolExecutor(
            max_workers=1,
            # spawn: a fork of a process with an event loop and threads may inherit held locks.
            mp_context=multiprocessing.get_context("spawn"),
            initializer=self._initializer,
            initargs=(self._memory_bytes,),
        )
        try:
            pid = await asyncio.get_running_loop().run_in_executor(executor, _probe)
        except BrokenProcessPool:
            executor.shutdown(wait=False, cancel_futures=True)
            self._fall_back("extraction worker processes could not start")
            return None
        except BaseException:
            # Cancelled while the worker starts (a shutdown, a request given up): it is in neither _idle nor
            # _live, so nothing else would ever stop it.
            executor.shutdown(wait=False, cancel_futures=True)
            raise
        self._live.add(pid)
        return _Worker(executor, pid)

    def _drop(self, worker: _Worker) -> None:
        self._live.discard(worker.pid)
        worker.stop()

    def _fall_back(self, why: str) -> None:
        self._in_threads = True
        if not self._warned:
            self._warned = True
            logger.warning(
                "%s, so documents are parsed in threads of this process, without a memory limit; a program that "
                'embeds orc should guard its entry point with `if __name__ == "__main__":` '
                "(or set ORC_EXTRACTION_PROCESSES=0)",
                why,
            )

    async def aclose(self) -> None:
        """Stop the workers (a parse still running is abandoned with its worker)."""
        if self._warming is not None:
            self._warming.cancel()
            await asyncio.wait([self._warming])
        idle, self._idle = self._idle, []
        for pid in self._live - {worker.pid for worker in idle}:
            with contextlib.suppress(OSError):
                os.kill(pid, _KILL)  # busy: its parse is abandoned
        self._live.clear()
        for worker in idle:
            await asyncio.to_thread(worker.executor.shutdown, wait=True, cancel_futures=True)
