"""Where per-file summaries (digests) come from: a small port the document tools ask.

Digests are produced by the context-digest pipeline (context-digest-spec, Task A). Until a provider that builds
them is configured, :class:`NoSummaries` answers that no summary exists, and the tools say so instead of
inventing one. A provider plugs in through the composition root; the tools do not change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from orc.contracts import SourceSpan
from orc.documents.records import DigestStatus
from orc.models.summaries import DigestOfFile, MissingDigest, facts_of, render_file_digests
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


class SummaryWithSources(BaseModel):
    """A document's digest with the spans its facts cite, for an answer that summarizes the document and cites
    them; ``summary`` is None when the document has no digest yet."""

    document: str = Field(description="The name the document's SourceRefs use.")
    summary: DocumentSummary | None
    sources: list[SourceSpan] = Field(default_factory=list)
    missing: MissingDigest = Field(default="not_ready", description="Why ``summary`` is None, when it is.")


class FileSummaries(Protocol):
    """Reads the stored digests a summary request asks for ("Summarize lease.md"): what is stored, no model call."""

    async def __call__(
        self, principal: Principal, session_id: str, focus: tuple[str, str] | None, names: Sequence[str]
    ) -> list[SummaryWithSources]:
        """The digests of the documents ``names`` names among those a turn of ``session_id`` focused on ``focus``
        (type, id) can see, with the spans their facts cite."""
        ...


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


def missing_digest(document: AvailableDocument) -> MissingDigest:
    """Why ``document`` has no digest: its text could not be read (its processing failed, or it has no text),
    it is too long to summarize, or it is not made yet."""
    info = document.info
    if info.status == "failed" or info.digest_error_code == "not_extracted":
        return "unreadable"
    if info.digest_error_code == "too_long":
        return "too_long"
    return "not_ready"


def file_digests_of(found: Sequence[SummaryWithSources]) -> tuple[str, list[SourceSpan]]:
    """The answer prompt's file digests for ``found`` (:func:`orc.models.summaries.render_file_digests`), each
    fact citing the spans given with it, and those spans."""
    digests: list[DigestOfFile] = []
    sources: list[SourceSpan] = []
    for item in found:
        if item.summary is None:
            digests.append(DigestOfFile(item.document, None, missing=item.missing))
            continue
        # The digest cites <filename>::<span>; the prompt's refs are those of the spans given to the answer.
        refs = {source.span_id: source.ref for source in item.sources}
        facts = tuple(
            (claim, tuple(refs[ref.rpartition("::")[2]] for ref in cited if ref.rpartition("::")[2] in refs))
            for claim, cited in facts_of(item.summary.facts)
        )
        digests.append(DigestOfFile(item.document, item.summary.summary, facts))
        sources += item.sources
    return render_file_digests(digests), sources
