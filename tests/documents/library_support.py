"""A real document library (memory stores, real pipeline) and a small context tree with one document per context."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from orc.composition import Foundation, Services, Stores, build_runtime, extraction_limits
from orc.documents.catalog.library import DocumentLibrary
from orc.documents.intake.uploads import Upload
from orc.documents.parsing.extraction_pool import ExtractionPool
from orc.documents.records import ContextRef
from orc.principal import Principal
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider

ACME = Principal(organization="acme", user="alice")
SESSION = "conv-1"

# organization acme → folders f1, f2; usecases u11, u12 under f1 and u21 under f2.
TREE: list[tuple[ContextRef, str | None]] = [
    (ContextRef("folder", "f1"), None),
    (ContextRef("folder", "f2"), None),
    (ContextRef("usecase", "u11"), "f1"),
    (ContextRef("usecase", "u12"), "f1"),
    (ContextRef("usecase", "u21"), "f2"),
]
ORGANIZATION = ContextRef("organization", "acme")


def extraction_pool(workers: int = 0, settings: Settings | None = None) -> ExtractionPool:
    """An extraction pool under the limits of ``settings`` (default: the defaults); ``workers`` 0 parses in threads.
    Close it with ``aclose`` when it has workers."""
    settings = settings or Settings()
    limits = extraction_limits()
    return ExtractionPool(
        workers, settings.extraction_memory_mb << 20, limits=limits, deadline_seconds=settings.extraction_seconds
    )


def memory_stores() -> Stores:
    """Fresh in-memory stores."""
    return Stores(collections=MemoryCollectionProvider(), blobs=MemoryBlobStore())


@asynccontextmanager
async def open_runtime(settings: Settings | None = None) -> AsyncIterator[Services]:
    """The whole process (orchestrator, MCP server, library) on memory stores and the offline model."""
    async with build_runtime(settings or Settings(), stores=memory_stores()) as runtime:
        yield runtime


def library_of(runtime: Services) -> DocumentLibrary:
    """The runtime's document library."""
    return runtime.documents.library


async def build_tree(foundation: Foundation, principal: Principal = ACME) -> None:
    """Create the tree and attach ``<id>.txt`` to every context and ``session.txt`` to the session."""
    for ref, parent in TREE:
        await foundation.directory.put(principal, ref, ref.id.upper(), parent)
    for ref in [ContextRef("organization", principal.organization), *(ref for ref, _ in TREE)]:
        text = f"The {ref.type} {ref.id} document says the code word of {ref.id} is zebra{ref.id}."
        await foundation.context_documents.add(principal, ref, [Upload(f"{ref.id}.txt", text.encode())])
    await foundation.session_files.add(
        principal, SESSION, [Upload("session.txt", b"The session note mentions a zebra.")]
    )
