"""Keeping an organization's ANN segments: the vectors of recently indexed documents (the *delta*) are folded into
a new segment once there are enough of them, and segments of about the same size are merged into one (as Lucene
merges its segments), which keeps a search to a handful of graphs and drops the rows of replaced and deleted
documents. One process at a time per organization does it, under a lock of its own (not the write lock: writes and
searches go on meanwhile)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orc.search.embedded.directory import DocumentsDatabase, Segment
from orc.search.embedded.layout import organization_folder
from orc.search.embedded.segments import write_segment

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

FOLD_SPANS = 20_000
"""Spans of vectors the delta holds before they are folded into a new segment."""
MERGE_FACTOR = 4
"""Segments of one size class merged into one when there are this many."""
MAX_SEGMENT_SPANS = 200_000
"""No merge makes a segment bigger: the process that builds one holds its vectors in memory meanwhile (about
150 MB at 384 dimensions in half precision, plus the graph)."""


class SegmentUpkeep:
    """Folds and merges the segments of :class:`DocumentsDatabase` under ``root``; :meth:`stop` makes a run in the
    background end after the step it is making."""

    def __init__(
        self,
        root: Path,
        database: DocumentsDatabase,
        *,
        fold_spans: int = FOLD_SPANS,
        merge_factor: int = MERGE_FACTOR,
        max_segment_spans: int = MAX_SEGMENT_SPANS,
    ) -> None:
        self._root = root
        self._database = database
        self._fold_spans = max(1, fold_spans)
        self._merge_factor = max(2, merge_factor)
        self._max_segment_spans = max_segment_spans
        self._stopped = False

    def stop(self) -> None:
        """End background runs after their current step."""
        self._stopped = True

    def run(self, organization: str, *, wait: bool = False) -> None:
        """Fold the delta into segments and merge segments until nothing is due. A process that finds another one
        at it leaves the work to that one (unless ``wait``: then it waits its turn, and goes on even when
        stopped)."""
        from filelock import FileLock, Timeout  # in the worker thread: importing it touches the file system

        folder = organization_folder(self._root, "vectors", organization)
        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(folder / ".orc-fold.lock", fallback_to_soft=False)
        try:
            lock.acquire(blocking=wait)
        except Timeout:
            return
        with lock:
            while not (self._stopped and not wait) and self._step(organization, folder):
                pass

    def _step(self, organization: str, folder: Path) -> bool:
        """One fold or merge, if one is due; whether one was made."""
        with self._database.sql() as db:
            delta = db.execute(
                "SELECT model, dims, SUM(spans), GROUP_CONCAT(entry) FROM vector_sets "
                "WHERE organization = ? AND segment IS NULL GROUP BY model, dims",
                (organization,),
            ).fetchall()
            segments = [
                Segment(*row)
                for row in db.execute(
                    "SELECT segment, model, dims, spans, file FROM vector_segments WHERE organization = ?",
                    (organization,),
                )
            ]
        merged: list[Segment] = []
        entries: list[int] = []
        plan: tuple[str, int] | None = None
        for model, dims, spans, listed in delta:
            if spans >= self._fold_spans:
                plan, entries = (model, dims), [int(entry) for entry in listed.split(",")]
                break
        if plan is None:
            merged = self._due_merge(segments)
            if not merged:
                return False
            plan = (merged[0].model, merged[0].dims)
            with self._database.sql() as db:
                marks = ",".join("?" * len(merged))
                entries = [
                    entry
                    for (entry,) in db.execute(
                        f"SELECT entry FROM vector_sets WHERE segment IN ({marks})",
                        [segment.segment for segment in merged],
                    )
                ]
        model, dims = plan
        name, count = write_segment(folder, dims, self._vector_parts(entries, dims))
        with self._database.sql() as db, db:
            self._database.forget(organization)
            cursor = db.execute(
                "INSERT INTO vector_segments (organization, model, dims, spans, file) VALUES (?, ?, ?, ?, ?)",
                (organization, model, dims, count, name),
            )
            segment = cursor.lastrowid
            # Entries replaced or deleted meanwhile are gone from the table: their rows in the new segment are
            # dead keys, dropped at search time and at the next merge.
            for first in range(0, len(entries), 500):
                chunk = entries[first : first + 500]
                db.execute(
                    f"UPDATE vector_sets SET segment = ? WHERE entry IN ({','.join('?' * len(chunk))})",
                    [segment, *chunk],
                )
            for old in merged:
                db.execute("DELETE FROM vector_segments WHERE segment = ?", (old.segment,))
        for old in merged:
            with contextlib.suppress(OSError):  # mapped elsewhere on Windows: left for the OS to refuse later
                (folder / old.file).unlink()
        return True

    def _due_merge(self, segments: Sequence[Segment]) -> list[Segment]:
        """The smallest size class with ``merge_factor`` segments (of one model) that may still grow."""
        classes: dict[tuple[str, int, int], list[Segment]] = {}
        for segment in segments:
            if segment.spans * 2 > self._max_segment_spans:
                continue
            size_class = int(math.log(max(segment.spans, 1) / self._fold_spans + 1, self._merge_factor))
            classes.setdefault((segment.model, segment.dims, size_class), []).append(segment)
        for _, members in sorted(classes.items(), key=lambda item: item[0][2]):
            if len(members) < self._merge_factor:
                continue
            chosen: list[Segment] = []
            for segment in sorted(members, key=lambda segment: segment.spans)[: self._merge_factor]:
                if sum(member.spans for member in chosen) + segment.spans > self._max_segment_spans:
                    break
                chosen.append(segment)
            if len(chosen) >= 2:
                return chosen
        return []

    def _vector_parts(self, entries: Sequence[int], dims: int) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        import numpy as np

        for first in range(0, len(entries), 200):
            chunk = entries[first : first + 200]
            with self._database.sql() as db:
                rows = db.execute(
                    f"SELECT entry, dims, data FROM vector_sets WHERE entry IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
            for entry, row_dims, data in rows:
                if row_dims == dims:
                    yield entry, np.frombuffer(data, dtype="<f4").reshape(-1, dims)
