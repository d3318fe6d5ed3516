"""A conversation's documents as the document processor left them: what the retriever searches them as.

document_chat searches these instead of downloading and extracting the blobs again. A version is used only when its
record is ``ready``, was chunked by the current chunker and describes the content the blob holds now (the blob's
``sha256`` metadata, written with it); anything else is for the caller to extract itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from orc.documents.records import session_scope
from orc.principal import Principal
from orc.search.port import index_version
from orc.search.retriever import Target
from orc.search.spans import CHUNKING_VERSION
from orc.search.text_store import VectorLocation
from orc.storage.ports import BlobInfo


class FileRecord(Protocol):
    """What is read of a session document's catalog record."""

    @property
    def file_id(self) -> str: ...
    @property
    def filename(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def content_hash(self) -> str: ...
    @property
    def extracted_text_hash(self) -> str | None: ...
    @property
    def chunking_version(self) -> str | None: ...


class FileRecords(Protocol):
    """The session files service, as far as reading a conversation's records goes."""

    async def recent_files(self, principal: Principal, conversation_id: str) -> Sequence[FileRecord]:
        """The conversation's file records, possibly as read a moment ago (each is checked against its blob)."""
        ...


@dataclass(frozen=True, slots=True)
class FoundTexts:
    """What :meth:`ProcessedTexts.targets` found for a set of blobs."""

    targets: dict[str, Target] = field(default_factory=dict)
    """The processed version (as a search target) of each blob that has one for its current content."""
    document_ids: dict[str, str] = field(default_factory=dict)
    """The catalog id of each blob that has a record, processed or not (what citations name)."""


class ProcessedTexts(Protocol):
    """Where document_chat finds documents that were already processed."""

    async def targets(self, principal: Principal, conversation_id: str, blobs: Mapping[str, BlobInfo]) -> FoundTexts:
        """The processed versions (as search targets) and the catalog ids of the named blobs."""
        ...


class NothingProcessed:
    """No stored texts: every document is extracted by its caller (a document_chat without the document store)."""

    async def targets(self, principal: Principal, conversation_id: str, blobs: Mapping[str, BlobInfo]) -> FoundTexts:
        """Always empty."""
        return FoundTexts()


NOTHING_PROCESSED = NothingProcessed()


class SessionTexts:
    """:class:`ProcessedTexts` from the session records (the search engine holds their spans)."""

    def __init__(self, records: FileRecords) -> None:
        self._records = records

    async def targets(self, principal: Principal, conversation_id: str, blobs: Mapping[str, BlobInfo]) -> FoundTexts:
        """The conversation's records (those its turn's file check just read, if that was a moment ago) whose
        processed version is the blob's current content; no text is read here."""
        found: dict[str, Target] = {}
        document_ids: dict[str, str] = {}
        scope = session_scope(principal.organization, principal.user, conversation_id)
        for record in await self._records.recent_files(principal, conversation_id):
            info = blobs.get(record.filename)
            if info is not None:
                document_ids[record.filename] = record.file_id
            if (
                info is not None
                and record.status == "ready"
                and record.chunking_version == CHUNKING_VERSION
                and record.extracted_text_hash is not None
                and info.metadata.get("sha256") == record.content_hash
            ):
                found[record.filename] = Target(
                    document_id=record.file_id,
                    name=record.filename,
                    version=index_version(record.extracted_text_hash, record.chunking_version),
                    scope=scope,
                    stored=VectorLocation(principal.partition_key, record.file_id, record.content_hash),
                )
        return FoundTexts(found, document_ids)
