"""The session's aggregate digest as the answer prompt shows it: its summary and facts, briefly, when ready.

Read on the turn's critical path, so it is cheap: the text is kept per session for a few seconds (a digest
changes only after an upload, and a turn a few seconds later sees the new one); a ready aggregate is found from
the session's header alone; a session without files costs that one read, and one whose aggregate is not ready
a manifest read besides, which also schedules the aggregate if nobody is making it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from orc.digests.context import ContextFiles
from orc.errors import OrcError
from orc.principal import Principal

MAX_FACTS = 12
MAX_CHARS = 3_000
TTL_SECONDS = 5.0


class PromptDigests:
    """The text of each session's ready aggregate digest, for the answer prompt's digest section."""

    def __init__(self, context: ContextFiles, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._context = context
        self._clock = clock
        self._cache: dict[tuple[str, str], tuple[float, str]] = {}

    async def text(self, principal: Principal, session_id: str) -> str:
        """The digest's summary and facts with their SourceRefs; empty when the session has no ready aggregate."""
        key = (principal.partition_key, session_id)
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None and now - cached[0] < TTL_SECONDS:
            return cached[1]
        text = await self._read(principal, session_id)
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key] = (now, text)
        return text

    async def _read(self, principal: Principal, session_id: str) -> str:
        try:
            digest = await self._context.current_aggregate(principal, session_id)
            if digest is None:
                _, digest = await self._context.aggregate(principal, session_id)
        except OrcError:
            return ""  # no files, not ready, or failed: the section is left out
        return render(digest)


def render(digest: dict[str, object]) -> str:
    """``Summary: …`` then ``- claim [refs]`` lines, cut to :data:`MAX_CHARS`."""
    lines = []
    summary = str(digest.get("summary") or "").strip()
    if summary:
        lines.append(f"Summary: {summary}")
    facts = digest.get("facts")
    for fact in (facts if isinstance(facts, list) else [])[:MAX_FACTS]:
        if isinstance(fact, dict) and fact.get("claim"):
            refs = [ref for ref in fact.get("sources") or [] if isinstance(ref, str)]
            lines.append(f"- {str(fact['claim']).strip()} [{'; '.join(refs)}]" if refs else f"- {fact['claim']}")
    return "\n".join(lines)[:MAX_CHARS]
