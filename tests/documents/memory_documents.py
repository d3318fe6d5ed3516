"""The document services built directly on in-memory stores, without the runtime (no model, no MCP, no graph)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from orc.conversations import ConversationRepository
from orc.documents.catalog.context_documents import ContextDocuments
from orc.documents.catalog.contexts import ContextDirectory
from orc.documents.catalog.library import DocumentLibrary
from orc.documents.catalog.reprocessing import Reprocessor
from orc.documents.catalog.scopes import DocumentScopes
from orc.documents.intake.processing import DocumentProcessor
from orc.documents.sessions import SessionFiles
from orc.search.memory import MemorySearchEngine
from orc.search.port import IndexedDocument, SearchEngine
from orc.search.retriever import Retriever
from orc.search.text_store import TextStore
from orc.storage.memory import MemoryBlobStore, MemoryCollection
from tests.documents.library_support import extraction_pool

MAX_UPLOAD_BYTES = 1024 * 1024


class BrokenIndex(MemorySearchEngine):
    """An index whose writes fail while ``broken`` (a full disk, a search service outage)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True

    async def upsert(self, document: IndexedDocument) -> None:
        if self.broken:
            raise OSError("no space left on device")
        await super().upsert(document)


@dataclass
class MemoryDocuments:
    """The stores and services of the document layer, each one reachable by a test."""

    catalog: MemoryCollection
    blobs: MemoryBlobStore
    texts: TextStore
    retriever: Retriever
    processor: DocumentProcessor
    directory: ContextDirectory
    context_documents: ContextDocuments
    session_files: SessionFiles
    conversations: ConversationRepository

    def scopes(self) -> DocumentScopes:
        """Scope resolution over these services."""
        return DocumentScopes(
            directory=self.directory,
            context_documents=self.context_documents,
            session_files=self.session_files,
            conversations=self.conversations,
        )

    def reprocessor(self) -> Reprocessor:
        """The reprocessing policy over this catalog and pipeline."""
        return Reprocessor(self.catalog, self.processor)

    def library(self) -> DocumentLibrary:
        """The tool operations over these services (no summaries)."""
        return DocumentLibrary(
            scopes=self.scopes(), texts=self.texts, retriever=self.retriever, reprocessor=self.reprocessor()
        )


@asynccontextmanager
async def memory_documents(engine: SearchEngine | None = None) -> AsyncIterator[MemoryDocuments]:
    """Fresh in-memory document services (``engine``: the search index, in memory by default); background
    processing stops on exit."""
    catalog, blobs = MemoryCollection("catalog"), MemoryBlobStore()
    texts = TextStore(MemoryCollection("document_text"))
    retriever = Retriever(engine or MemorySearchEngine(), texts)
    processor = DocumentProcessor(
        catalog, blobs, texts, retriever, max_document_bytes=MAX_UPLOAD_BYTES, extraction_pool=extraction_pool()
    )
    directory = ContextDirectory(catalog)
    try:
        yield MemoryDocuments(
            catalog=catalog,
            blobs=blobs,
            texts=texts,
            retriever=retriever,
            processor=processor,
            directory=directory,
            context_documents=ContextDocuments(
                catalog, blobs, directory, processor, texts, max_upload_bytes=MAX_UPLOAD_BYTES
            ),
            session_files=SessionFiles(
                catalog, blobs, max_upload_bytes=MAX_UPLOAD_BYTES, processor=processor, texts=texts
            ),
            conversations=ConversationRepository(MemoryCollection("conversations")),
        )
    finally:
        await processor.aclose()
        await retriever.aclose()
