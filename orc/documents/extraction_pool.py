"""Extraction in worker processes with a memory ceiling, so one hostile document cannot take the serving process.

The size bounds of :mod:`orc.documents.limits` stop the bombs they can see coming (a zip's declared sizes, the
text a parser returned). What they cannot see — a PDF stream that inflates to gigabytes inside the parser, a
parser's own blow-up — is contained here: the parsing runs in a small pool of worker processes, each under an
address-space limit (``ORC_EXTRACTION_MEMORY_MB``). A worker that hits it fails that one document
(``extraction_memory``) and is replaced; the serving process's memory and event loop are untouched, and a parse
holding a worker's GIL never holds the server's. ``ORC_EXTRACTION_PROCESSES=0`` keeps extraction in threads of
the serving process (what tests and tiny set-ups may prefer: no worker start-up).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from orc.documents.extraction import ExtractedDocument, extract
from orc.documents.limits import ExtractionLimits
from orc.errors import ExtractionError

__all__ = ["ExtractionPool"]

logger = logging.getLogger(__name__)


def _limit_memory(memory_bytes: int) -> None:
    """Worker initializer: cap the worker's address space (where the platform allows it)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):  # Windows, or a hard limit already lower
        logger.debug("could not limit the extraction worker's memory", exc_info=True)


def _extract_in_worker(data: bytes, filename: str, content_type: str | None, limits: ExtractionLimits) -> Any:
    try:
        return extract(data, filename, content_type, limits)
    except MemoryError:
        # Raised inside the worker when the cap is hit: the worker itself is fine once the parse is dropped.
        raise ExtractionError(
            f"{filename!r} needs more memory to extract than one document may use", code="extraction_memory"
        ) from None


class ExtractionPool:
    """A lazily started pool of ``workers`` extraction processes, each limited to ``memory_bytes``."""

    def __init__(self, workers: int, memory_bytes: int) -> None:
        if workers < 1:
            raise ValueError("an extraction pool needs at least one worker")
        self._workers = workers
        self._memory_bytes = memory_bytes
        self._executor: ProcessPoolExecutor | None = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            # spawn: a fork of a process with an event loop and threads may inherit held locks.
            self._executor = ProcessPoolExecutor(
                max_workers=self._workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_limit_memory,
                initargs=(self._memory_bytes,),
            )
        return self._executor

    async def extract(
        self, data: bytes, filename: str, content_type: str | None, limits: ExtractionLimits
    ) -> ExtractedDocument:
        """Extract ``data`` in a worker process; :class:`ExtractionError` when the document is over a bound."""
        loop = asyncio.get_running_loop()
        try:
            result: ExtractedDocument = await loop.run_in_executor(
                self._pool(), _extract_in_worker, data, filename, content_type, limits
            )
        except BrokenProcessPool:
            # The worker died (killed by the kernel, or the cap hit where Python could not raise): start afresh.
            self._reset()
            raise ExtractionError(
                f"{filename!r} needs more memory to extract than one document may use", code="extraction_memory"
            ) from None
        return result

    def _reset(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    async def aclose(self) -> None:
        """Stop the workers (a parse still running is abandoned with its worker)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)
