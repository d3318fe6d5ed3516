"""Extraction in worker processes with a memory ceiling, so one hostile document cannot take the serving process.

The size bounds of :mod:`orc.documents.limits` stop the bombs they can see coming (a zip's declared sizes, the
text a parser returned). What they cannot see — a PDF stream that inflates to gigabytes inside the parser, a
parser's own blow-up — is contained here: the parsing runs in a small pool of worker processes, each under an
address-space limit (``ORC_EXTRACTION_MEMORY_MB``). A worker that hits it fails that one document
(``extraction_memory``) and is replaced; the serving process's memory and event loop are untouched, and a parse
holding a worker's GIL never holds the server's. ``ORC_EXTRACTION_PROCESSES=0`` keeps extraction in threads of
the serving process (what tests and tiny set-ups may prefer: no worker start-up).

Small plain-text documents (text, Markdown, CSV, JSON, HTML up to :data:`IN_PROCESS_MAX_BYTES`) are parsed in a
thread of the serving process even with a pool: they cannot decompress, and their parse costs less than the trip
to a worker and back (a 600-byte text: 0.24 ms in a thread, 0.64 ms through a worker; 100 at once 18 vs 38 ms,
since one worker takes them one by one). A set-up that only ever sees such documents never starts a worker.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from orc.documents.extraction import CSV, HTML, JSON, MARKDOWN, TEXT, ExtractedDocument, detect_media_type, extract
from orc.documents.limits import ExtractionLimits
from orc.errors import ExtractionError, UnsupportedMediaType

__all__ = ["IN_PROCESS_MAX_BYTES", "ExtractionPool", "parses_in_process"]

IN_PROCESS_MAX_BYTES = 128 * 1024
"""Plain-text documents up to this size are parsed in the serving process (a few ms at most, bounded memory)."""

_PLAIN_TEXT = frozenset({TEXT, MARKDOWN, CSV, JSON, HTML})

logger = logging.getLogger(__name__)


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


def _limit_memory(memory_bytes: int) -> None:
    """Worker initializer: cap the worker's address space (where the platform allows it)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):  # Windows, or a hard limit already lower
        logger.debug("could not limit the extraction worker's memory", exc_info=True)


def _probe() -> bool:
    """The first job of a new pool: proves the workers start (they import the program's ``__main__``)."""
    return True


def _extract_in_worker(data: bytes, filename: str, content_type: str | None, limits: ExtractionLimits) -> Any:
    try:
        return extract(data, filename, content_type, limits)
    except MemoryError:
        # Raised inside the worker when the cap is hit: the worker itself is fine once the parse is dropped.
        raise ExtractionError(
            f"{filename!r} needs more memory to extract than one document may use", code="extraction_memory"
        ) from None


class ExtractionPool:
    """A lazily started pool of ``workers`` extraction processes, each limited to ``memory_bytes``.

    Workers are started with ``spawn``, so each imports the program's ``__main__`` module again; a program that
    does its work at import time (no ``if __name__ == "__main__":`` guard) cannot start them. The pool's first job
    is a probe: when it fails, documents are parsed in threads of this process from then on, with a warning,
    instead of every upload failing.
    """

    def __init__(self, workers: int, memory_bytes: int, *, initializer: Callable[[int], None] = _limit_memory) -> None:
        if workers < 1:
            raise ValueError("an extraction pool needs at least one worker")
        self._workers = workers
        self._memory_bytes = memory_bytes
        self._initializer = initializer
        self._executor: ProcessPoolExecutor | None = None
        self._probed = False
        self._in_threads = False
        self._probing = asyncio.Lock()

    @property
    def in_threads(self) -> bool:
        """Whether the workers could not start and extraction runs in threads of this process."""
        return self._in_threads

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            # spawn: a fork of a process with an event loop and threads may inherit held locks.
            self._executor = ProcessPoolExecutor(
                max_workers=self._workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=self._initializer,
                initargs=(self._memory_bytes,),
            )
        return self._executor

    async def _started(self) -> ProcessPoolExecutor | None:
        """The pool once its workers are known to start, or None when they cannot (extract in threads)."""
        async with self._probing:
            if not self._probed and not self._in_threads:
                try:
                    await asyncio.get_running_loop().run_in_executor(self._pool(), _probe)
                    self._probed = True
                except BrokenProcessPool:
                    self._reset()
                    self._in_threads = True
                    logger.warning(
                        "extraction worker processes could not start, so documents are parsed in this process "
                        "without a memory limit; a program that embeds orc must guard its entry point with "
                        '`if __name__ == "__main__":` (or set ORC_EXTRACTION_PROCESSES=0)'
                    )
        return None if self._in_threads else self._pool()

    async def extract(
        self, data: bytes, filename: str, content_type: str | None, limits: ExtractionLimits
    ) -> ExtractedDocument:
        """Extract ``data`` in a worker process (small plain text in a thread of this one); :class:`ExtractionError`
        when the document is over a bound."""
        pool = None if parses_in_process(data, filename, content_type) else await self._started()
        if pool is None:
            return await asyncio.to_thread(extract, data, filename, content_type, limits)
        loop = asyncio.get_running_loop()
        try:
            result: ExtractedDocument = await loop.run_in_executor(
                pool, _extract_in_worker, data, filename, content_type, limits
            )
        except BrokenProcessPool:
            # The worker died on this document (killed by the kernel, or the cap hit where Python could not
            # raise): the document fails, and the next one gets a fresh pool.
            self._reset()
            raise ExtractionError(
                f"{filename!r} needs more memory to extract than one document may use", code="extraction_memory"
            ) from None
        return result

    def _reset(self) -> None:
        executor, self._executor = self._executor, None
        self._probed = False
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    async def aclose(self) -> None:
        """Stop the workers (a parse still running is abandoned with its worker)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
