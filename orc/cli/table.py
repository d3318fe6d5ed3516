"""Columns that line up on a terminal, whatever the lengths of the names in them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, indent: str = "") -> list[str]:
    """``header`` and ``rows`` as lines with each column padded to its widest cell (the last is not padded);
    nothing at all when there are no rows."""
    body = [list(row) for row in rows]
    if not body:
        return []
    widths = [max(len(str(row[column])) for row in [list(header), *body]) for column in range(len(header))]
    lines = []
    for row in [list(header), *body]:
        cells = [str(cell).ljust(width) for cell, width in zip(row[:-1], widths[:-1], strict=True)]
        lines.append(indent + "  ".join([*cells, str(row[-1])]).rstrip())
    return lines
