"""A conversation's documents as the document processor left them: stored text, spans and search index.

document_chat reads these instead of downloading and extracting the blobs again. A version is used only when its
record is ``ready``, was chunked by the current chunker and describes the content the blob holds now (the blob's
``sha256`` metadata, written with it); anything else is for the caller to extract itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from orc.principal import Principal
from orc.search.span_index import IndexCache, SpanIndex, build_index
from orc.search.spans import CHUNKING_VERSION
from orc.search.text_store import TextStore, VectorLocation
from orc.search.vectors import SpanVectors
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
    """What :meth:`ProcessedTexts.indexes` found for a set of blobs."""

    indexes: dict[str, SpanIndex] = field(default_factory=dict)
    """The processed text (as a search index) of each blob that has one for its current content."""
    document_ids: dict[str, str] = field(default_factory=dict)
    """The catalog id of each blob that has a record, processed or not (what citations name)."""


class ProcessedTexts(Protocol):
    """Where document_chat finds documents that were already processed."""

    async def indexes(self, principal: Principal, conversation_id: str, blobs: Mapping[str, BlobInfo]) -> FoundTexts:
        """The processed texts and the catalog ids of the named blobs."""
        ...


class NothingProcessed:
    """No stored texts: every document is extracted by its caller (a document_chat without the document store)."""

    async def indexes(self, principal: Principal, conversation_id: str, blobs: Mapping[str, BlobInfo]) -> FoundTexts:
        """Always empty."""
        return FoundTexts()


NOTHING_PROCESSED = NothingProcessed()


class SessionTexts:
    """:class:`ProcessedTexts` from the session records, the text store and the process's search index cache."""

    def __init__(
        self, records: FileRecords, texts: TextStore, indexes: IndexCache, vectors: SpanVectors | None = None
    ) -> None:
        self._records = records
        self._texts = texts
        self._indexes = indexes
        self._vectors = vectors

    async def indexes(self, principal: Principal, conversation_id: str, blobs: Mapping[str, BlobInfo]) -> FoundTexts:
        """The conversation's records (those its turn's file check just read, if that was a moment ago), then one
        text load per document not in the index cache."""
        usable: dict[str, FileRecord] = {}
        document_ids: dict[str, str] = {}
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
                usable[record.filename] = record
        found = await asyncio.gather(*(self._index(principal, record) for record in usable.values()))
        indexes = {name: index for name, index in zip(usable, found, strict=True) if index is not None}
        return FoundTexts(indexes, document_ids)

    async def _index(self, principal: Principal, record: FileRecord) -> SpanIndex | None:
        assert record.extracted_text_hash is not None and record.chunking_version is not None
        cached = self._indexes.get((record.extracted_text_hash, record.chunking_version))
        if cached is None:
            text = await self._texts.load(principal.partition_key, record.file_id, record.content_hash)
            if text is None or text.extracted_text_hash != record.extracted_text_hash:
                return None
            cached = await asyncio.to_thread(build_index, text)
            self._indexes.put(cached)
        if self._vectors is not None:
            # Where this text's vectors are stored, for the vector leg (it knows a text, not a record).
            self._vectors.remember(
                cached.text, VectorLocation(principal.partition_key, record.file_id, record.content_hash)
            )
        return cached
