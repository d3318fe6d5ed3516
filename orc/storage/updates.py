"""Read-modify-write of one item under optimistic concurrency, written once for every record that several
requests, processes or instances change: conversation headers, session headers, catalog records, context nodes,
quota counters, processing claims.

The item is read, changed by the caller's pure function, and written back on the condition that nobody wrote it
since (its ETag; a create when there was none, which fails if someone created it first). A lost race reads and
changes again after a short random pause that doubles with each attempt (tenacity's full jitter, up to 50 ms), so
instances contending for one counter spread out instead of colliding in step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from tenacity import AsyncRetrying, RetryError, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from orc.errors import ETagMismatch, ItemAlreadyExists, ItemNotFound, StorageUnavailable
from orc.storage.ports import DocumentCollection, StoredItem

WRITE_ATTEMPTS = 20
"""Conditional writes tried before the item counts as too busy."""
FIRST_PAUSE = 0.001
"""Seconds: the longest pause after the first lost write; it doubles after each one, up to :data:`MAX_PAUSE`."""
MAX_PAUSE = 0.05

_LOST_RACE = retry_if_exception_type((ItemAlreadyExists, ETagMismatch, ItemNotFound))
"""Someone else created, wrote or deleted the item first: read again and decide again."""
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
    retrying = AsyncRetrying(
        retry=_LOST_RACE,
        stop=stop_after_attempt(attempts),
        wait=wait_random_exponential(multiplier=FIRST_PAUSE, max=MAX_PAUSE),
    )
    try:
        async for attempt in retrying:
            with attempt:
                if attempt.retry_state.attempt_number > 1 or item is _UNREAD:
                    item = await collection.get(partition_key, item_id)
                assert item is None or isinstance(item, StoredItem)
                body = change(item)
                if body is None:
                    return None
                if item is None:
                    return await collection.create(partition_key, item_id, body)
                return await collection.replace(partition_key, item_id, body, if_match=item.etag)
    except RetryError:
        pass
    raise StorageUnavailable(busy, retry_after=1)
