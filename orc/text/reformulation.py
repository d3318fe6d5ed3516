"""A second wording of a query whose terms the documents do not use: close spellings and shared stems.

When a retrieval round finds weak evidence (query terms that no passage contains), each such term is replaced by
the documents' own terms that are spelled almost like it ("terminaton" → "termin") or share its first letters
("licens" → "licensor", "licensee"). No model is asked: it is cheap, deterministic, and bounded to one more
round by its callers.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence

MAX_ALTERNATIVES = 3
"""Vocabulary terms tried in place of one unknown term."""
PREFIX = 5
"""Letters a vocabulary term must share with an unknown term to stand in for it."""
CLOSENESS = 0.8


def unmatched_terms(terms: Sequence[str], vocabulary: Collection[str]) -> list[str]:
    """The query terms that no indexed passage contains."""
    return [term for term in terms if term not in vocabulary]


def reformulated(terms: Sequence[str], vocabulary: Collection[str]) -> list[str]:
    """The query with every unknown term replaced by the vocabulary terms closest to it; ``[]`` when no unknown
    term has a stand-in (another round would find the same)."""
    known = [term for term in terms if term in vocabulary]
    alternatives: list[str] = []
    for term in unmatched_terms(terms, vocabulary):
        found = [word for word in difflib.get_close_matches(term, vocabulary, n=MAX_ALTERNATIVES, cutoff=CLOSENESS)]
        if len(term) >= PREFIX:
            stem = term[:PREFIX]
            found += sorted(word for word in vocabulary if word.startswith(stem) and word not in found)
        alternatives += [word for word in found[:MAX_ALTERNATIVES] if word not in alternatives]
    return [*known, *alternatives] if alternatives else []
