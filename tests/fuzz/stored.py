"""What ``orc serve``'s embedded storage holds, read from its ORC_HOME the way an operator would: the keys of the
SQLite items and the files of the blob folder."""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

NOT_CONTENT = frozenset({"digests", "document_text", "idempotency"})
"""Collections that background work fills from what an earlier, accepted request stored (they grow while a later
request is refused, through no fault of its own), and the idempotency records, which remember a refusal on purpose:
the same key and request get the same answer again (orc.http.idempotent)."""


@dataclass(frozen=True)
class Stored:
    items: frozenset[tuple[str, str, str]]
    blobs: frozenset[str]

    def added_since(self, before: Stored) -> set[str]:
        """Items and blobs here that ``before`` did not have."""
        added = {f"{collection}/{pk}/{key}" for collection, pk, key in self.items - before.items}
        return added | {f"blob:{name}" for name in self.blobs - before.blobs}


def stored(home: Path) -> Stored:
    """The item keys (but :data:`NOT_CONTENT`) and blob names under ``home``."""
    items: frozenset[tuple[str, str, str]] = frozenset()
    database = home / "orc.sqlite3"
    if database.exists():
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=60)) as connection:
            rows = connection.execute("SELECT collection, pk, id FROM items").fetchall()
        items = frozenset((collection, pk, key) for collection, pk, key in rows if collection not in NOT_CONTENT)
    folder = home / "blobs"
    blobs = (
        frozenset(
            str(path.relative_to(folder))
            for path in folder.rglob("*")
            if path.is_file() and ".meta" not in path.relative_to(folder).parts
        )
        if folder.exists()
        else frozenset()
    )
    return Stored(items, blobs)
