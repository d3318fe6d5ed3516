"""The follow-up suffix of a retrieval query: a follow-up's words from the previous exchange, ``(context: …)``.

:func:`orc.models.rewriting.rewrite_follow_up` appends it; the retriever (:mod:`orc.search.retriever`) weighs its
words below the question's own.
"""

from __future__ import annotations

import re

_CONTEXT_SUFFIX = re.compile(r"\s*\(context:\s*([^()]*)\)\s*$", re.IGNORECASE)


def split_context(query: str) -> tuple[str, list[str]]:
    """A query and the words of its closing ``(context: …)`` suffix (``[]`` when it has none)."""
    match = _CONTEXT_SUFFIX.search(query)
    if not match:
        return query.strip(), []
    return query[: match.start()].strip(), match.group(1).split()
