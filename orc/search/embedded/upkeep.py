"""Keeping an organization's ANN segments: the vectors of recently indexed documents (the *delta*) are folded into
a segment once there are enough of them — added to a copy of the open segment's graph until it is full, then into a
new one — which keeps a search to a handful of graphs; the rows of replaced and deleted documents are left out of
the copies, and segments that lost many of them are merged or built again. One process at a time per organization
does it, under a lock of its own (not the write lock: writes and searches go on meanwhile)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orc.search.embedded.directory import DocumentsDatabase, Segment
from orc.search.embedded.layout import organization_folder
from orc.search.embedded.segments import write_segment

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

FOLD_SPANS = 20_000
"""Spans of vectors the delta holds before they are folded into a segment."""
MAX_SEGMENT_SPANS = 100_000
"""A segment grows by folds up to this many live spans, then the next fold starts a new one. Smaller segments are
cheaper to insert into (a graph's insertion cost grows with its size) and to hold while one is extended (about
90 MB at 384 dimensions), larger ones make a search read fewer graphs; at a million spans a search reads ten."""


@dataclass(frozen=True, slots=True)
class _Plan:
    """One step: a new segment of ``model`` made of ``base``'s graph (if any) plus the vectors of ``entries``,
    replacing the segments of ``replaced`` (``base`` among them)."""

    model: str
    dims: int
    base: Segment | None
    entries: list[int]
    replaced: list[Segment]


class SegmentUpkeep:
    """Folds and merges the segments of :class:`DocumentsDatabase` under ``root``; :meth:`stop` makes a run in the
    background end after the step it is making.

    A fold adds the delta's vectors to a copy of the organization's open segment (the fullest one they fit in)
    rather than building a segment of its own that later merges build again: each vector is inserted in a graph
    once. The copy leaves out the rows of entries replaced or deleted since; a segment that is more than half such
    rows is built again from its live ones, and two segments whose live rows fit in one are merged."""

    def __init__(
        self,
        root: Path,
        database: DocumentsDatabase,
        *,
        fold_spans: int = FOLD_SPANS,
        max_segment_spans: int = MAX_SEGMENT_SPANS,
    ) -> None:
        self._root = root
        self._database = database
        self._fold_spans = max(1, fold_spans)
        self._max_segment_spans = max(self._fold_spans, max_segment_spans)
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
        """One fold, merge or rebuild, if one is due; whether one was made."""
        with self._database.sql() as db:
            delta = db.execute(
                "SELECT model, dims, entry, spans FROM vector_sets WHERE organization = ? AND segment IS NULL "
                "ORDER BY entry",
                (organization,),
            ).fetchall()
            segments = [
                Segment(*row)
                for row in db.execute(
                    "SELECT segment, model, dims, spans, file FROM vector_segments WHERE organization = ? "
                    "ORDER BY segment",
                    (organization,),
                )
            ]
            live: dict[int, int] = dict(
                db.execute(
                    "SELECT segment, SUM(spans) FROM vector_sets WHERE organization = ? AND segment IS NOT NULL "
                    "GROUP BY segment",
                    (organization,),
                ).fetchall()
            )
        plan = self._fold(delta, segments, live) or self._merge(segments, live)
        if plan is None:
            return False
        with self._database.sql() as db:
            absorbed = [segment.segment for segment in plan.replaced if segment is not plan.base]
            kept = _entries_of(db, [plan.base.segment] if plan.base else [])
            entries = [*plan.entries, *_entries_of(db, absorbed)]
        name: str | None = None
        count = 0
        if plan.base is not None or entries:
            name, count = write_segment(
                folder,
                plan.dims,
                self._vector_parts(entries, plan.dims),
                base=folder / plan.base.file if plan.base else None,
                keep=kept,
            )
        with self._database.sql() as db, db:
            self._database.forget(organization)
            segment: int | None = None
            if name is not None:
                nodes = count + (plan.base.spans if plan.base else 0)  # removed rows stay in a graph as nodes
                cursor = db.execute(
                    "INSERT INTO vector_segments (organization, model, dims, spans, file) VALUES (?, ?, ?, ?, ?)",
                    (organization, plan.model, plan.dims, nodes, name),
                )
                segment = cursor.lastrowid
            # Entries replaced or deleted meanwhile are gone from the table: their rows in the new segment are
            # dead keys, dropped at search time and left out of the next copy.
            moved = [*kept, *entries]
            for first in range(0, len(moved), 500):
                chunk = moved[first : first + 500]
                db.execute(
                    f"UPDATE vector_sets SET segment = ? WHERE entry IN ({','.join('?' * len(chunk))})",
                    [segment, *chunk],
                )
            for old in plan.replaced:
                db.execute("DELETE FROM vector_segments WHERE segment = ?", (old.segment,))
        for old in plan.replaced:
            with contextlib.suppress(OSError):  # mapped elsewhere on Windows: left for the OS to refuse later
                (folder / old.file).unlink()
        return True

    def _fold(
        self, delta: Sequence[tuple[str, int, int, int]], segments: Sequence[Segment], live: dict[int, int]
    ) -> _Plan | None:
        """The delta of a model once it holds ``fold_spans``: added to the fullest segment it fits in (up to what
        that one has room for), or a new segment."""
        waiting: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for model, dims, entry, spans in delta:
            waiting.setdefault((model, dims), []).append((entry, spans))
        for (model, dims), listed in waiting.items():
            if sum(spans for _, spans in listed) < self._fold_spans:
                continue
            room = [
                segment
                for segment in segments
                if (segment.model, segment.dims) == (model, dims)
                and live.get(segment.segment, 0) + self._fold_spans <= self._max_segment_spans
                and self._extendable(segment, live)
            ]
            base = max(room, key=lambda segment: live.get(segment.segment, 0), default=None)
            capacity = self._max_segment_spans - (live.get(base.segment, 0) if base else 0)
            chosen: list[int] = []
            for entry, spans in listed:
                if chosen and capacity < spans:
                    break
                chosen.append(entry)
                capacity -= spans
            return _Plan(model, dims, base, chosen, [base] if base else [])
        return None

    def _merge(self, segments: Sequence[Segment], live: dict[int, int]) -> _Plan | None:
        """Two segments of a model whose live rows fit in one (the smaller added to the larger), else a segment
        that is more than half dead rows, built again."""
        kinds: dict[tuple[str, int], list[Segment]] = {}
        for segment in segments:
            kinds.setdefault((segment.model, segment.dims), []).append(segment)
        for (model, dims), members in kinds.items():
            ordered = sorted(members, key=lambda segment: live.get(segment.segment, 0))
            if len(ordered) >= 2 and sum(live.get(segment.segment, 0) for segment in ordered[:2]) <= (
                self._max_segment_spans
            ):
                smaller, larger = ordered[:2]
                base = larger if self._extendable(larger, live) else None
                return _Plan(model, dims, base, [], [smaller, larger])
            for segment in members:
                if not self._extendable(segment, live):
                    return _Plan(model, dims, None, [], [segment])
        return None

    @staticmethod
    def _extendable(segment: Segment, live: dict[int, int]) -> bool:
        """Whether at least half a segment's graph is live rows (otherwise it is built again from them)."""
        return 2 * live.get(segment.segment, 0) >= segment.spans

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


def _entries_of(db: sqlite3.Connection, segments: Sequence[int]) -> list[int]:
    """The vector sets the ``segments`` hold."""
    if not segments:
        return []
    marks = ",".join("?" * len(segments))
    return [entry for (entry,) in db.execute(f"SELECT entry FROM vector_sets WHERE segment IN ({marks})", segments)]
