"""Per-file digests of processed documents (Task A), cached by (``extracted_text_hash``, ``chunking_version``,
``prompt_version``) and written into each document's catalog record.

Any processed document can be digested (session files and context documents alike): a :class:`DigestTarget`
names its record, its stored text and the hashes the digest is made from. A cache hit costs no model call: the
cached digest is relabelled for the file's name and the record points at it. Identical text being digested for two
records at once is digested once (one in-flight job per cache key in this process). A record is only updated while
it still describes the text that was digested, so a replaced document never receives its predecessor's digest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orc.clock import utc_now
from orc.digests.envelopes import format_name
from orc.digests.runner import DigestRunner
from orc.digests.schema import Digest, digest_hash, relabel
from orc.digests.store import DigestStore, StoredDigest, file_digest_key, file_digest_ref
from orc.documents.intake.processing import DocumentLocation
from orc.documents.records import DigestErrorCode, DigestStatus
from orc.errors import StorageUnavailable
from orc.search.text_store import TextStore
from orc.storage.ports import DocumentCollection, StoredItem
from orc.storage.updates import update_item

logger = logging.getLogger(__name__)

MAX_INPUT_CHARS = 400_000
"""The longest text (about 100,000 tokens) sent to Task A in one call; longer documents end ``error`` (code
``too_long``)."""


@dataclass(frozen=True, slots=True)
class DigestTarget:
    """A processed document to digest: its record and text, and the hashes of the text it has now."""

    location: DocumentLocation
    content_hash: str
    media_type: str | None
    extracted_text_hash: str
    chunking_version: str

    @classmethod
    def of(cls, location: DocumentLocation, record: Mapping[str, Any]) -> DigestTarget | None:
        """The target for a record whose text is ready, else ``None``."""
        if (
            record.get("status") != "ready"
            or not record.get("extracted_text_hash")
            or not record.get("chunking_version")
        ):
            return None
        return cls(
            location=location,
            content_hash=str(record["content_hash"]),
            media_type=record.get("media_type"),
            extracted_text_hash=str(record["extracted_text_hash"]),
            chunking_version=str(record["chunking_version"]),
        )

    @property
    def format(self) -> str:
        """The ``FORMAT`` the envelope and the digest's ``document`` name."""
        return format_name(self.media_type, self.location.filename)


@dataclass(frozen=True, slots=True)
class _Made:
    stored: StoredDigest | None
    error: str | None = None
    code: DigestErrorCode | None = None


class FileDigests:
    """Makes, caches, serves and forgets per-file digests."""

    def __init__(
        self,
        catalog: DocumentCollection,
        texts: TextStore,
        store: DigestStore,
        runner: DigestRunner,
        *,
        max_concurrency: int,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self._catalog = catalog
        self._texts = texts
        self._store = store
        self._runner = runner
        self._slots = asyncio.Semaphore(max_concurrency)
        self._making: dict[tuple[str, str], asyncio.Task[_Made]] = {}
        self.parsing: set[tuple[str, str]] = set()
        """Records this process marked ``parsing`` and has not finished (set back to ``stale`` on shutdown)."""

    @property
    def prompt_version(self) -> str:
        """The per-file ``prompt_version`` in force."""
        return self._runner.per_file_version

    def key_for(self, extracted_text_hash: str, chunking_version: str) -> str:
        """The cache key of a digest of this text made with the prompt in force."""
        return file_digest_key(extracted_text_hash, chunking_version, self.prompt_version)

    def is_current(self, record: Mapping[str, Any]) -> bool:
        """Whether the record's digest (or digest error) was made for its current text with the current prompt.

        A file whose text could not be extracted has no text to digest: its digest error is current until its
        content changes (which starts processing again). Counting it as unsettled kept the session's aggregate
        ``parsing`` for ever.
        """
        if record.get("status") == "failed":
            return record.get("digest_status") == "error"
        if record.get("digest_status") not in ("ready", "error") or not record.get("extracted_text_hash"):
            return False
        key = self.key_for(str(record["extracted_text_hash"]), str(record.get("chunking_version")))
        return record.get("digest_key") == key

    async def ensure(self, target: DigestTarget) -> DigestStatus:
        """Give the target's record a digest for its current text: from the cache, else by Task A.

        Returns ``ready`` or ``error`` (the reason is in the record's ``digest_error``), or ``stale`` when the
        record changed meanwhile and nothing was written.
        """
        key = self.key_for(target.extracted_text_hash, target.chunking_version)
        partition = target.location.partition_key
        cached = await self._store.file_digest(partition, key)
        if cached is None:
            await self._mark(target, {"digest_status": "parsing", "digest_error": None, "digest_error_code": None})
            made = await self._shared(target, key)
        else:
            made = _Made(cached)
        if made.stored is None:
            fields: dict[str, Any] = {
                "digest_status": "error",
                "digest_error": made.error,
                "digest_error_code": made.code,
                "digest_key": key,
                "digest_hash": None,
                "digest_ref": None,
            }
            return "error" if await self._mark(target, fields) else "stale"
        digest = self._labelled(made.stored, target.location.filename, target.format)
        fields = {
            "digest_status": "ready",
            "digest_error": None,
            "digest_error_code": None,
            "digest_key": key,
            "digest_hash": digest_hash(digest),
            "digest_ref": made.stored.ref,
            "prompt_version": self.prompt_version,
        }
        return "ready" if await self._mark(target, fields) else "stale"

    async def mark_error(
        self, target: DigestTarget | DocumentLocation, content_hash: str, reason: str, code: DigestErrorCode
    ) -> bool:
        """Record that no digest can be made for the record's current content (e.g. its text failed to extract)."""
        location = target.location if isinstance(target, DigestTarget) else target
        fields = {
            "digest_status": "error",
            "digest_error": reason,
            "digest_error_code": code,
            "digest_hash": None,
            "digest_ref": None,
        }
        return await self._write(location, content_hash, None, fields)

    async def mark_stale(self, location: DocumentLocation, content_hash: str) -> bool:
        """Record that the digest must be made again (its stored JSON is gone, or its maker was interrupted)."""
        fields = {"digest_status": "stale", "digest_key": None, "digest_hash": None, "digest_ref": None}
        return await self._write(location, content_hash, None, fields)

    async def load(self, partition_key: str, record: Mapping[str, Any]) -> Digest | None:
        """The record's per-file digest as it reads for the record's file, or ``None`` (missing or not current)."""
        ref = record.get("digest_ref")
        if record.get("digest_status") != "ready" or not ref or not self.is_current(record):
            return None
        stored = await self._store.load(partition_key, str(ref))
        if stored is None:
            return None
        filename = str(record["filename"])
        return self._labelled(stored, filename, format_name(record.get("media_type"), filename))

    async def release(self, partition_key: str, key: str | None) -> None:
        """Delete the cached digest ``key`` unless another record of the partition still points at it."""
        if not key:
            return
        if await self._catalog.query(partition_key, where={"digest_key": key}, limit=1):
            return
        await self._store.delete(partition_key, file_digest_ref(key))

    async def aclose(self) -> None:
        """Cancel the digests being made, wait for them to stop, and mark their records ``stale`` again."""
        tasks = list(self._making.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for partition_key, item_id in list(self.parsing):
            item = await self._catalog.get(partition_key, item_id)
            if item is not None and item.body.get("digest_status") == "parsing":
                fields = {"digest_status": "stale", "digest_key": None, "digest_hash": None, "digest_ref": None}
                location = DocumentLocation(partition_key, item_id, str(item.body.get("document_id") or ""), "", "")
                await self._write(location, str(item.body.get("content_hash")), None, fields)

    @staticmethod
    def _labelled(stored: StoredDigest, filename: str, fmt: str) -> Digest:
        old = str(stored.meta.get("filename") or filename)
        return relabel(stored.digest, old_filename=old, new_filename=filename, fmt=fmt)

    async def _shared(self, target: DigestTarget, key: str) -> _Made:
        """Task A for ``key``, shared with any other record of the same text being digested now."""
        slot = (target.location.partition_key, key)
        task = self._making.get(slot)
        if task is None or task.done():
            task = asyncio.create_task(self._make(target, key), name=f"digest-{key[:12]}")
            self._making[slot] = task

            def forget(done: asyncio.Task[_Made]) -> None:
                if self._making.get(slot) is done:
                    del self._making[slot]

            task.add_done_callback(forget)
        # Shielded: one waiter giving up (its request ended) must not cancel the digest others wait for.
        return await asyncio.shield(task)

    async def _make(self, target: DigestTarget, key: str) -> _Made:
        location = target.location
        text = await self._texts.load(location.partition_key, location.document_id, target.content_hash)
        if text is None or text.extracted_text_hash != target.extracted_text_hash:
            return _Made(None, "the document's text is not available; analyze the document again", "text_unavailable")
        chars = sum(len(span.text) for span in text.spans)
        if chars > MAX_INPUT_CHARS:
            return _Made(
                None,
                f"too long to summarize ({chars:,} characters of text; a summary reads at most {MAX_INPUT_CHARS:,}):"
                " ask about it instead, and the answer quotes the passages it needs",
                "too_long",
            )
        async with self._slots:
            outcome = await self._runner.per_file(
                location.filename, target.format, [(span.span_id, span.text) for span in text.spans]
            )
        if outcome.digest is None:
            return _Made(None, outcome.error, outcome.error_code)
        meta = {
            "filename": location.filename,
            "format": target.format,
            "extracted_text_hash": target.extracted_text_hash,
            "chunking_version": target.chunking_version,
            "prompt_version": outcome.prompt_version,
            "digest_hash": digest_hash(outcome.digest),
        }
        ref = await self._store.save_file_digest(location.partition_key, key, outcome.digest, meta)
        return _Made(StoredDigest(ref=ref, digest=outcome.digest, meta=meta))

    async def _mark(self, target: DigestTarget, fields: dict[str, Any]) -> bool:
        return await self._write(target.location, target.content_hash, target.extracted_text_hash, fields)

    async def _write(
        self, location: DocumentLocation, content_hash: str, extracted_text_hash: str | None, fields: dict[str, Any]
    ) -> bool:
        """Write ``fields`` into the record while it still holds this content (and text); False when it does not."""
        slot = (location.partition_key, location.item_id)

        def marked(item: StoredItem | None) -> dict[str, Any] | None:
            if item is None or item.body.get("content_hash") != content_hash:
                return None
            if extracted_text_hash is not None and item.body.get("extracted_text_hash") != extracted_text_hash:
                return None
            return {**item.body, **fields, "digest_updated_at": utc_now()}

        try:
            stored = await update_item(self._catalog, location.partition_key, location.item_id, marked, busy="busy")
        except StorageUnavailable:
            logger.warning("could not record the digest status of %s: too many concurrent writes", location.document_id)
            return False
        if stored is not None and fields.get("digest_status") == "parsing":
            self.parsing.add(slot)
        else:
            self.parsing.discard(slot)
        return stored is not None
