"""Related terms for query expansion: the user's word for what a document says otherwise ("sue" → "litigation").

The table ships with orc (``related_terms.tsv.gz``, made from WordNet 3.0 by ``tools/related_terms.py``; its
licence is ``related_terms.LICENSE`` beside it) and is read once per process on first use: nothing is downloaded.
Keys and values are orc's stems (:func:`orc.text.stem`).
"""

from __future__ import annotations

import gzip
from functools import cache
from importlib.resources import files

_NONE: tuple[str, ...] = ()


@cache
def _table() -> dict[str, tuple[str, ...]]:
    data = files("orc.text").joinpath("related_terms.tsv.gz").read_bytes()
    table = {}
    for line in gzip.decompress(data).decode().splitlines():
        word, _, names = line.partition("\t")
        table[word] = tuple(names.split())
    return table


def related_terms(term: str) -> tuple[str, ...]:
    """The stems WordNet relates to the stem ``term`` in its most frequent senses, closest first."""
    return _table().get(term, _NONE)
