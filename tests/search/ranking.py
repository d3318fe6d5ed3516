"""Ranking texts through the one retriever, in memory: what a test of retrieval quality arranges."""

from __future__ import annotations

from collections.abc import Sequence

from orc.extracted import ExtractedDocument
from orc.search.memory import MemorySearchEngine
from orc.search.port import ScopeFields, index_version, owner_key
from orc.search.retriever import RankedSpan, Retriever, Target
from orc.search.text_store import DocumentText, process_extracted

ORGANIZATION = "acme"
SCOPE = ScopeFields(organization=ORGANIZATION, owner=owner_key("organization", ORGANIZATION))


def text_of(*passages: str, media_type: str = "text/plain") -> DocumentText:
    """One document whose spans are ``passages`` (each a paragraph long enough to be a span of its own)."""
    return process_extracted(ExtractedDocument(pages=["\n\n".join(passages)], media_type=media_type))


def target(text: DocumentText, name: str = "doc.txt", *, weight: float = 1.0) -> Target:
    """``text`` as a document the retriever ranks in memory."""
    return Target(
        document_id=f"doc-{name}",
        name=name,
        version=index_version(text.extracted_text_hash, text.chunking_version),
        scope=SCOPE,
        weight=weight,
        text=text,
    )


async def ranked(query: str, targets: Sequence[Target], *, limit: int = 10) -> list[RankedSpan]:
    """The spans the retriever ranks for ``query`` over ``targets``."""
    found = await Retriever(MemorySearchEngine()).retrieve(query, ORGANIZATION, targets, limit=limit)
    return found.spans
