"""Approximate nearest neighbours over an organization's span vectors: immutable HNSW segments (``usearch``) on
disk, memory-mapped by every process that searches them.

Why segments: an HNSW graph cannot be shared by processes while one of them changes it, and rewriting one
organization-wide file on every upload would cost a gigabyte a commit at a million spans. So the embedded engine
searches the vectors of recently indexed documents exactly (the *delta*, kept small) and folds the delta into a
segment once it is big enough — a copy of the open segment's graph with the delta added, written as a new file,
until the segment is full — which keeps a search to a handful of graphs and each vector to one insertion (see
:mod:`orc.search.embedded.upkeep`). A segment file never changes once written: a process that has it mapped keeps
reading it safely while another one writes the next.

Keys: each stored vector set (one document version's matrix) has an ``entry`` number that is never reused; the key
of a span's vector is the entry and the span's ordinal in one integer, so a hit names its document version, and a
hit of an entry that is no longer current (replaced, deleted) is dropped by the engine.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

ORDINAL_BITS = 24
"""Low bits of a key: the span's ordinal (16 million spans a document)."""
STORED_AS = "bf16"
"""Half precision in the graph: half the disk and mapped pages of float32, and cosine scores within about 1e-3.
bfloat16 rather than IEEE half: CPUs with AVX-512 BF16 (this machine's) compute its distances natively, which
builds a graph about 1.6 times as fast as ``f16`` (``bench/README.md``, ``search_scale``); a segment written
earlier in ``f16`` says so in its file and is read as such."""
CONNECTIVITY = 16
EXPANSION_ADD = 64
"""usearch's defaults are 16 and 128; 64 builds a graph about twice as fast with no loss measured at these sizes."""
EXPANSION_SEARCH = 256
"""Candidates a graph search keeps. With 128, a query near one of 200,000 random 384-d vectors found that vector
in the top 10 for about 3 queries in 4 (97 in 100 at 50,000); 256 finds it for about 9 in 10 at a fifth more
time a query (``bench/README.md``, ``search_scale``). Real embeddings cluster, which helps a graph: random vectors
are its worst case."""


def key(entry: int, ordinal: int) -> int:
    """The key of span ``ordinal`` of vector set ``entry``."""
    return (entry << ORDINAL_BITS) | ordinal


def entry_of(key: int) -> tuple[int, int]:
    """``(entry, ordinal)`` of a key."""
    return key >> ORDINAL_BITS, key & ((1 << ORDINAL_BITS) - 1)


BUILD_THREADS = 1
"""A segment's graph is built on one thread. Rows inserted on several threads at once cannot all link to one
another, and a few end up where no search reaches them (about one in 3,000 of 20,000 random 384-d rows, one in 200
to 500 of 50-row graphs of 16-d ones; none built serially): a document a user does not find. One thread is also what
a fold should take of a two-core machine — it runs in the background beside the writes, whose commits want the
other core — and when the cores are busy, two threads build no faster than one while spending more CPU spinning on
the graph's locks (``bench/README.md``, ``search_scale``)."""


def write_segment(
    folder: Path,
    dims: int,
    parts: Iterable[tuple[int, npt.NDArray[np.float32]]],
    *,
    base: Path | None = None,
    keep: Collection[int] = (),
    threads: int = BUILD_THREADS,
) -> tuple[str, int]:
    """Build a segment of ``parts`` (each a vector set's entry and its matrix, one row per span) and write it
    to a new file in ``folder``, whole or not at all; its file name and how many vectors were added.

    With ``base`` (a segment file), the new segment starts from a copy of that one's graph, its rows of entries
    not in ``keep`` removed: each vector is put in a graph once rather than again at every merge (an insertion
    is most of what a segment costs), and the base file itself is left as it is. ``threads``: see
    :data:`BUILD_THREADS` (more than one leaves a few rows where no search reaches them)."""
    import numpy as np
    from usearch.index import Index

    if base is None:
        index = Index(
            ndim=dims,
            metric="cos",
            dtype=STORED_AS,
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )
    else:
        restored = Index.restore(str(base), view=False, expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)
        if restored is None:
            raise FileNotFoundError(base)
        index = restored
        keys = np.asarray(index.keys, dtype=np.uint64)
        live = np.fromiter(keep, dtype=np.uint64, count=len(keep))
        dead = keys[~np.isin(keys >> np.uint64(ORDINAL_BITS), live)]
        if len(dead):
            index.remove(dead)
    count = 0
    for keys, matrix in _batches(parts, dims):
        index.add(keys, matrix, threads=threads)
        count += len(matrix)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{uuid.uuid4().hex}.usearch"
    scratch = folder / f".{name}.partial"
    index.save(str(scratch))
    with open(scratch, "rb") as handle:
        os.fsync(handle.fileno())
    os.replace(scratch, folder / name)
    return name, count


ADD_BATCH_ROWS = 16_384
"""Rows given to usearch in one call (and so held as one float32 matrix meanwhile)."""


def _batches(
    parts: Iterable[tuple[int, npt.NDArray[np.float32]]], dims: int
) -> Iterator[tuple[npt.NDArray[np.uint64], npt.NDArray[np.float32]]]:
    import numpy as np

    keys: list[npt.NDArray[np.uint64]] = []
    rows: list[npt.NDArray[np.float32]] = []
    held = 0
    for entry, matrix in parts:
        if not len(matrix):
            continue
        keys.append((np.uint64(entry) << np.uint64(ORDINAL_BITS)) + np.arange(len(matrix), dtype=np.uint64))
        rows.append(matrix)
        held += len(matrix)
        if held >= ADD_BATCH_ROWS:
            yield np.concatenate(keys), np.ascontiguousarray(np.concatenate(rows), dtype=np.float32)
            keys, rows, held = [], [], 0
    if held:
        yield np.concatenate(keys), np.ascontiguousarray(np.concatenate(rows), dtype=np.float32)


class SegmentViews:
    """The segments this process has mapped, opened on first use and let go when no longer listed."""

    def __init__(self) -> None:
        self._views: dict[Path, Any] = {}
        self._lock = threading.Lock()

    def search(self, path: Path, query: npt.NDArray[np.float32], count: int) -> list[tuple[int, float]]:
        """The ``count`` nearest keys of the segment at ``path`` with their cosine similarity."""
        view = self._view(path)
        if not len(view):
            return []
        found = view.search(query, min(count, len(view)), threads=1)  # one query: no thread pool to start
        return [(int(k), 1.0 - float(distance)) for k, distance in zip(found.keys, found.distances, strict=True)]

    def _view(self, path: Path) -> Any:
        with self._lock:
            view = self._views.get(path)
            if view is None:
                from usearch.index import Index

                view = Index.restore(str(path), view=True, expansion_search=EXPANSION_SEARCH)
                if view is None:
                    raise FileNotFoundError(path)
                self._views[path] = view
            return view

    def retain(self, folder: Path, paths: Sequence[Path]) -> None:
        """Unmap the segments of ``folder`` not in ``paths`` (merged away by some process: a deleted file's disk
        space comes back only once no process maps it)."""
        keep = set(paths)
        with self._lock:
            for path in [path for path in self._views if path.parent == folder and path not in keep]:
                del self._views[path]

    def clear(self) -> None:
        """Unmap every segment."""
        with self._lock:
            self._views.clear()
