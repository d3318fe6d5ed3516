"""Read-modify-write of one item under optimistic concurrency, written once for every record that several
requests, processes or instances change: conversation headers, session headers, catalog records, context nodes,
quota counters, processing claims.

The item is read, changed by the caller's pure function, and written back on the condition that nobody wrote it
since (its ETag; a create when there was none, which fails if someone created it first). A lost race reads and
changes again: at once the first time, then after a short random pause that doubles with each attempt (full
jitter, 1 ms to 50 ms), so instances contending for one counter spread out instead of colliding in step.

Not tenacity: its retry loop costs ~50-250 µs a call even when nothing is contended (measured on the 2-core
machine), and a turn makes several of these writes; this loop costs nothing until a write is lost.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any, Final

from orc.errors import ETagMismatch, ItemAlreadyExists, ItemNotFound, StorageUnavailable
from orc.storage.ports import DocumentCollection, StoredItem

WRITE_ATTEMPTS = 20
"""Conditional writes tried before the item counts as too busy."""
FIRST_PAUSE = 0.001
"""Seconds of the longest pause after the second lost write; it doubles after each one, up to MAX_PAUSE."""
MAX_PAUSE = 0.05

_UNREAD: Final = object()


async def update_item(
    collection: DocumentCollection,
    partition_key: str,
    item_id: str,
    change: Callable[[StoredItem | None], dict[str, Any] | None],
    *,
    busy: str,
    attempts: int = WRITE_ATTEMPTS,
    current: StoredItem | object | None = _UNREAD,
) -> StoredItem | None:
    """Write ``change(item)`` in place of the item as read (created when there is none), on the condition that it
    is still as read; ``change`` is called again on a fresh read after each lost race, and returns ``None`` to write
    nothing (then ``None`` is returned). ``current``: the item as the caller already read it, which saves the first
    read. After ``attempts`` lost races: :class:`~orc.errors.StorageUnavailable` with ``busy`` (retry after 1 s)."""
    item = current
    for attempt in range(attempts):
        if attempt > 1:
            await asyncio.sleep(random.uniform(0, min(MAX_PAUSE, FIRST_PAUSE * 2 ** (attempt - 2))))
        if attempt or item is _UNREAD:
            item = await collection.get(partition_key, item_id)
        assert item is None or isinstance(item, StoredItem)
        body = change(item)
        if body is None:
            return None
        try:
            if item is None:
                return await collection.create(partition_key, item_id, body)
            return await collection.replace(partition_key, item_id, body, if_match=item.etag)
        except (ItemAlreadyExists, ETagMismatch, ItemNotFound):
            continue  # someone else wrote (or deleted) it first: read again and decide again
    raise StorageUnavailable(busy, retry_after=1)
