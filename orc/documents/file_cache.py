"""The ``file_id`` cache of document_chat: processed (extracted and spanned) session documents with a TTL.

A ``file_id`` is a handle the model round-trips through ``cached_file_info``; it is not the catalog's
``document_id``. It is only honoured for the scope (principal + conversation) and blob it was issued for and
while the blob is unchanged, so a leaked or replayed id can never read another user's document or stale text.
The cache is per process; a miss only costs a fresh download and extraction.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from orc.documents.spans import Span
from orc.text import tokenize


@dataclass(frozen=True, slots=True)
class ProcessedFile:
    """One processed document: its spans and the blob version they were made from."""

    file_id: str
    scope: str
    """The session blob prefix (``{organization}/{user}/{conversation}/``) the id was issued under."""
    blob_name: str
    etag: str
    spans: tuple[Span, ...]
    tokens: tuple[tuple[str, ...], ...]
    """Each span's :func:`orc.text.tokenize` tokens, made once so every later question only ranks them."""
    media_type: str
    created_at: float
    expires_at: float


class ProcessedFileCache:
    """An in-process, LRU-bounded map of ``file_id`` to :class:`ProcessedFile` with a time to live.

    ``clock`` is injectable so tests expire entries without sleeping. Safe to share between threads.

    Entries are ordered by last use (LRU), not by expiry, so expiries are kept apart in put order, which is
    expiry order (one TTL, a monotonic clock): a put drops what has expired from the front of that queue instead
    of scanning every entry, which made a burst of first turns quadratic in the cache's size.
    """

    def __init__(
        self,
        ttl_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_entries: int = 1000,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        if max_entries <= 0:
            raise ValueError("max_entries must be positive")
        self._ttl = ttl_seconds
        self._clock = clock
        self._max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], ProcessedFile] = OrderedDict()
        self._expiries: deque[tuple[float, tuple[str, str]]] = deque()
        """(expires_at, key) per put, oldest first; a key may have left the cache already (LRU, stale, discard)."""
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def put(self, *, scope: str, blob_name: str, etag: str, spans: Sequence[Span], media_type: str) -> ProcessedFile:
        """Store a processed document under a new random ``file_id``; the stored entry."""
        now = self._clock()
        entry = ProcessedFile(
            file_id=f"file-{secrets.token_hex(12)}",
            scope=scope,
            blob_name=blob_name,
            etag=etag,
            spans=tuple(spans),
            tokens=tuple(tuple(tokenize(span.text)) for span in spans),
            media_type=media_type,
            created_at=now,
            expires_at=now + self._ttl,
        )
        key = (scope, entry.file_id)
        with self._lock:
            self._drop_expired(now)
            self._entries[key] = entry
            self._expiries.append((entry.expires_at, key))
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
            if len(self._expiries) > 2 * self._max_entries:
                # Keys that left by LRU, staleness or discard linger in the queue until they would have expired;
                # rebuilding from the live entries keeps it bounded (amortized over max_entries puts).
                self._expiries = deque(sorted((e.expires_at, k) for k, e in self._entries.items()))
        return entry

    def get(self, file_id: str, blob_name: str, etag: str, *, scope: str) -> ProcessedFile | None:
        """The entry for ``file_id`` if it is known in ``scope``, unexpired, for ``blob_name`` and ``etag``.

        ``None`` for an unknown id, an id of another scope (user or conversation), another blob, an
        expired entry, or a stale one (the blob changed since it was processed; the entry is dropped).
        """
        key = (scope, file_id)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry.blob_name != blob_name:
                return None
            if entry.expires_at <= self._clock() or entry.etag != etag:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry

    def discard(self, file_id: str, *, scope: str) -> None:
        """Forget ``file_id`` (no error when unknown)."""
        with self._lock:
            self._entries.pop((scope, file_id), None)

    def _drop_expired(self, now: float) -> None:
        while self._expiries and self._expiries[0][0] <= now:
            _, key = self._expiries.popleft()
            # File ids are random and never reused, so a key still present is the entry this expiry is for.
            self._entries.pop(key, None)
