"""Stored digests, through the document-collection port (collection ``digests``), in the owner's partition.

- A **per-file digest** is keyed by its cache key (``extracted_text_hash``, ``chunking_version``,
  ``prompt_version``; context-digest-spec §6.1): item ``fd:{key}``. The same text gets the same digest whatever
  the file is called and whichever session of the same owner it is attached to.
- An **aggregate digest** belongs to one session and is keyed by the fingerprint of its inputs:
  item ``ad:{session}:{inputs}``.

A digest's JSON up to :data:`INLINE_CHARS` characters is stored inside its item; a bigger one is split into parts
of at most :data:`PART_CHARS` characters (``{id}:p00001``...), written before the head that names them, so no item
approaches Cosmos DB's 2 MB cap and a reader that finds the head finds every part.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from orc.clock import utc_now
from orc.digests.schema import Digest
from orc.storage.ports import DocumentCollection

INLINE_CHARS = 400_000
PART_CHARS = 400_000
"""400,000 characters are at most 1.6 MB of UTF-8, with room for the JSON escapes of the parts' text."""
_FILE_PREFIX = "fd:"
_AGGREGATE_PREFIX = "ad:"


def file_digest_key(extracted_text_hash: str, chunking_version: str, prompt_version: str) -> str:
    """The per-file cache key (§6.1) as one opaque id."""
    return hashlib.sha256(f"{extracted_text_hash}|{chunking_version}|{prompt_version}".encode()).hexdigest()


def file_digest_ref(key: str) -> str:
    """``digest_ref`` of the per-file digest with cache key ``key``."""
    return _FILE_PREFIX + key


@dataclass(frozen=True, slots=True)
class StoredDigest:
    """A stored digest with what it was made from."""

    ref: str
    digest: Digest
    meta: dict[str, Any]


class DigestStore:
    """Saves, loads and deletes per-file and aggregate digests."""

    def __init__(
        self, collection: DocumentCollection, *, inline_chars: int = INLINE_CHARS, part_chars: int = PART_CHARS
    ) -> None:
        self._items = collection
        self._inline_chars = inline_chars
        self._part_chars = part_chars

    async def save_file_digest(self, partition_key: str, key: str, digest: Digest, meta: dict[str, Any]) -> str:
        """Store the per-file digest for cache key ``key`` (idempotent: the same key always holds equal digests)."""
        ref = file_digest_ref(key)
        await self._save(partition_key, ref, digest, {"kind": "file_digest", **meta})
        return ref

    async def file_digest(self, partition_key: str, key: str) -> StoredDigest | None:
        """The per-file digest cached under ``key``, or ``None``."""
        return await self.load(partition_key, file_digest_ref(key))

    async def save_aggregate(
        self, partition_key: str, session_id: str, inputs: str, digest: Digest, meta: dict[str, Any]
    ) -> str:
        """Store a session's aggregate built from ``inputs``; returns its ``aggregate_digest_ref``."""
        ref = f"{_AGGREGATE_PREFIX}{session_id}:{inputs[:40]}"
        await self._save(partition_key, ref, digest, {"kind": "aggregate_digest", "session_id": session_id, **meta})
        return ref

    async def load(self, partition_key: str, ref: str) -> StoredDigest | None:
        """The digest stored under ``ref`` (per-file or aggregate), or ``None`` when missing or incomplete."""
        head = await self._items.get(partition_key, ref)
        if head is None:
            return None
        body = dict(head.body)
        parts = int(body.pop("parts", 0))
        if parts == 0:
            digest = body.pop("digest", None)
        else:
            found = sorted(await self._items.query(partition_key, id_prefix=f"{ref}:p"), key=lambda item: item.id)
            if [item.body.get("part") for item in found] != list(range(1, parts + 1)):
                return None
            digest = json.loads("".join(item.body["text"] for item in found))
        if not isinstance(digest, dict):
            return None
        return StoredDigest(ref=ref, digest=digest, meta=body)

    async def delete(self, partition_key: str, ref: str) -> None:
        """Delete a stored digest and its parts (no error when missing)."""
        head = await self._items.get(partition_key, ref)
        await self._items.delete(partition_key, ref)
        if head is not None and int(head.body.get("parts", 0)):
            for item in await self._items.query(partition_key, id_prefix=f"{ref}:p"):
                await self._items.delete(partition_key, item.id)

    async def delete_aggregates(self, partition_key: str, session_id: str, *, keep: str | None = None) -> None:
        """Delete the session's aggregates except ``keep`` (older aggregates are garbage once a newer one is named)."""
        prefix = f"{_AGGREGATE_PREFIX}{session_id}:"
        for item in await self._items.query(partition_key, id_prefix=prefix):
            # Session ids and fingerprints hold no ':', so a further ':' marks a part (deleted with its head).
            if ":" not in item.id[len(prefix) :] and item.id != keep:
                await self.delete(partition_key, item.id)

    async def _save(self, partition_key: str, ref: str, digest: Digest, meta: dict[str, Any]) -> None:
        text = json.dumps(digest, ensure_ascii=False, separators=(",", ":"))
        body: dict[str, Any] = {**meta, "created_at": utc_now()}
        if len(text) <= self._inline_chars:
            await self._items.upsert(partition_key, ref, {**body, "parts": 0, "digest": digest})
            return
        size = self._part_chars
        chunks = [text[offset : offset + size] for offset in range(0, len(text), size)]
        # Parts first, head last: a reader that finds the head finds every part it names.
        for number, chunk in enumerate(chunks, start=1):
            part = {"kind": "digest_part", "part": number, "text": chunk}
            await self._items.upsert(partition_key, f"{ref}:p{number:05d}", part)
        await self._items.upsert(partition_key, ref, {**body, "parts": len(chunks)})
