"""Where per-file summaries (digests) come from: a small port the document tools ask.

Digests are produced by the context-digest pipeline (context-digest-spec, Task A). Until a provider that builds
them is configured, :class:`NoSummaries` answers that no summary exists, and the tools say so instead of
inventing one. A provider plugs in through the composition root; the tools do not change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from orc.documents.records import DigestStatus
from orc.principal import Principal

if TYPE_CHECKING:
    from orc.documents.catalog.availability import AvailableDocument


class DocumentSummary(BaseModel):
    """A document's digest as the tools return it: its summary and facts, each fact with its SourceRefs."""

    document_id: str
    filename: str
    summary: str
    facts: list[dict[str, Any]] = Field(default_factory=list)
    prompt_version: str | None = None


class SummaryProvider(Protocol):
    """Reads and requests per-file digests of ready documents."""

    async def summary(self, principal: Principal, document: AvailableDocument) -> DocumentSummary | None:
        """The digest of ``document`` for its current text, or ``None`` when there is none (yet)."""
        ...

    async def request(self, principal: Principal, document: AvailableDocument) -> DigestStatus:
        """Start producing the digest if it is missing or stale; returns the digest status afterwards."""
        ...


class NoSummaries:
    """The provider used while no digest pipeline is configured: there is never a summary."""

    async def summary(self, principal: Principal, document: AvailableDocument) -> DocumentSummary | None:
        """Always ``None``."""
        return None

    async def request(self, principal: Principal, document: AvailableDocument) -> DigestStatus:
        """Nothing to start: the digest status stays ``none``."""
        return "none"
