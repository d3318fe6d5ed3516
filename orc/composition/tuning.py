"""The bounds of a process that are no operator's choice: the platform fixes them (the Functions timers sweep on
their own schedule, the queue trigger redelivers by its own count), or no deployment needs another value. They are
constants for a served process; a test or an embedder that needs others passes its own :class:`Tuning` to
:func:`orc.composition.build_runtime` (each was an ``ORC_`` setting once: docs/configuration.md, Changes)."""

from __future__ import annotations

from dataclasses import dataclass

MB = 1 << 20


@dataclass(frozen=True, slots=True)
class Tuning:
    """How often background sweeps run, how long claims and caches last, and the extraction bounds."""

    context_sweep_seconds: float | None = None
    """Seconds between sweeps of paused turns past their deadline (embedded; on Azure the timer function's
    schedule). ``None``: 15 s, or an eighth of ``ORC_CONTEXT_REQUEST_TIMEOUT`` when that is shorter, so a short
    deadline is kept to within its eighth."""
    processing_sweep_seconds: float = 15.0
    """Seconds between sweeps of uploads and processing a crash interrupted (embedded and ``orc worker``)."""
    processing_lease_seconds: float = 30.0
    """How long a processing lease lasts without renewal before another process may take the document over."""
    queue_visibility_seconds: float = 300.0
    """How long a received job stays invisible to other workers while one processes it."""
    queue_max_deliveries: int = 4
    """Deliveries of one job before it is given up as poison: below host.json's maxDequeueCount (5), so orc marks
    the document failed before the Functions host moves the message aside."""
    max_tool_rounds: int = 4
    """Tool-planning rounds of one turn before it answers from what it has."""
    digest_concurrency: int = 4
    """Digest model calls one process makes at once."""
    file_cache_ttl_seconds: float = 3600.0
    """How long a processed file of document_chat stays cached (and its ``file_id`` honoured)."""
    max_decompressed_bytes: int = 200 * MB
    """The most one document may decompress to while it is extracted (a decompression bomb fails that document)."""
    max_extracted_chars: int = 10_000_000
    """The most characters of text one document may extract to."""
    embeddings_batch_size: int = 256
    """Spans embedded per request to the embeddings model."""

    def context_sweep(self, context_request_timeout: float) -> float:
        """Seconds between sweeps of paused turns, for requests that wait ``context_request_timeout``."""
        if self.context_sweep_seconds is not None:
            return self.context_sweep_seconds
        return min(15.0, context_request_timeout / 8)


TUNED = Tuning()
"""The constants a served process runs with."""
