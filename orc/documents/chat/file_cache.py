"""The ``file_id`` cache of document_chat: processed (extracted and spanned) session documents with a TTL.

A ``file_id`` is a handle the model round-trips through ``cached_file_info``; it is not the catalog's
``document_id``. It is only honoured for the scope (principal + conversation) and blob it was issued for and
while the blob is unchanged, so a leaked or replayed id can never read another user's document or stale text.

The id carries its own proof: its expiry and a checksum of (scope, blob name, ETag, expiry), so any instance that
shares the stores can honour an id another instance issued (:meth:`ProcessedFileCache.honours`) without a shared
table of ids. It is a checksum, not a credential: the caller's own scope is what guards the documents, and a
forged id can only ever name the caller's own, current blob. The processed files themselves are cached per
process; a miss costs a read of the stored text (or an extraction, for a blob that was never processed).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from cachetools import TLRUCache

from orc.search.retriever import Target

_PREFIX = "file-"


@dataclass(frozen=True, slots=True)
class ProcessedFile:
    """One processed document: what the retriever searches it as, and the blob version it was made from."""

    file_id: str
    scope: str
    """The session blob prefix (``{organization}/{user}/{conversation}/``) the id was issued under."""
    blob_name: str
    etag: str
    target: Target
    """The document as the retriever searches it: indexed (stored text), or its extracted text for a blob that was
    never processed, kept so later questions only rank it."""
    created_at: float
    expires_at: float
    document_id: str | None = None
    """The catalog id of the session document (what citations name), when it has a catalog record."""


class ProcessedFileCache:
    """An in-process, LRU-bounded map of ``file_id`` to :class:`ProcessedFile` with a time to live.

    ``clock`` (wall-clock seconds, as ids are checked on other instances) is injectable so tests expire entries
    without sleeping. Safe to share between threads.

    Entries leave by last use beyond ``max_entries`` and at their own expiry (an adopted id keeps its issuer's):
    cachetools' time-aware LRU keeps the expiries in a heap, so a put drops what has expired without a scan.
    """

    def __init__(
        self,
        ttl_seconds: float,
        *,
        clock: Callable[[], float] = time.time,
        max_entries: int = 1000,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        if max_entries <= 0:
            raise ValueError("max_entries must be positive")
        self._ttl = ttl_seconds
        self._clock = clock
        self._entries: TLRUCache[tuple[str, str], ProcessedFile] = TLRUCache(
            maxsize=max_entries, ttu=lambda _key, entry, _now: entry.expires_at, timer=clock
        )
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._entries.expire()
            return len(self._entries)

    def put(
        self,
        *,
        scope: str,
        blob_name: str,
        etag: str,
        target: Target,
        file_id: str | None = None,
        document_id: str | None = None,
    ) -> ProcessedFile:
        """Store a processed document under ``file_id`` (an id :meth:`honours` accepts for it, e.g. one another
        instance issued) or a new one; the stored entry."""
        now = self._clock()
        expires_at = now + self._ttl
        if file_id is None or not self.honours(file_id, blob_name, etag, scope=scope):
            file_id = _issue(scope, blob_name, etag, expires_at)
        else:
            expires_at = min(expires_at, _expiry(file_id))  # an adopted id keeps its issuer's expiry
        entry = ProcessedFile(
            file_id=file_id,
            scope=scope,
            blob_name=blob_name,
            etag=etag,
            target=target,
            created_at=now,
            expires_at=expires_at,
            document_id=document_id,
        )
        with self._lock:
            self._entries[(scope, entry.file_id)] = entry
        return entry

    def honours(self, file_id: str, blob_name: str, etag: str, *, scope: str) -> bool:
        """Whether ``file_id`` was issued (by any instance) for this scope, blob and ETag, and has not expired."""
        parts = file_id[len(_PREFIX) :].split(".") if file_id.startswith(_PREFIX) else []
        if len(parts) != 3:
            return False
        nonce, expiry, _ = parts
        try:
            expires_at = int(expiry, 16) / 1000
        except ValueError:
            return False
        return expires_at > self._clock() and secrets.compare_digest(
            file_id, _handle(nonce, expiry, scope, blob_name, etag)
        )

    def get(self, file_id: str, blob_name: str, etag: str, *, scope: str) -> ProcessedFile | None:
        """The entry for ``file_id`` if it is known in ``scope``, unexpired, for ``blob_name`` and ``etag``.

        ``None`` for an unknown id, an id of another scope (user or conversation), another blob, an
        expired entry, or a stale one (the blob changed since it was processed; the entry is dropped).
        """
        key = (scope, file_id)
        with self._lock:
            entry = self._entries.get(key)  # None once expired
            if entry is None or entry.blob_name != blob_name:
                return None
            if entry.etag != etag:
                del self._entries[key]
                return None
            return entry

    def discard(self, file_id: str, *, scope: str) -> None:
        """Forget ``file_id`` (no error when unknown)."""
        with self._lock:
            self._entries.pop((scope, file_id), None)


def _issue(scope: str, blob_name: str, etag: str, expires_at: float) -> str:
    # The nonce makes every issue a new id; the expiry is in milliseconds, rounded down, so no instance honours
    # an id past the expiry its issuer gave it.
    return _handle(secrets.token_hex(6), format(int(expires_at * 1000), "x"), scope, blob_name, etag)


def _expiry(file_id: str) -> float:
    return int(file_id.split(".")[1], 16) / 1000


def _handle(nonce: str, expiry: str, scope: str, blob_name: str, etag: str) -> str:
    checksum = hashlib.sha256("\x1f".join((nonce, expiry, scope, blob_name, etag)).encode()).hexdigest()[:24]
    return f"{_PREFIX}{nonce}.{expiry}.{checksum}"
