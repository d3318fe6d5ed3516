"""A real document library (memory stores, real pipeline) and a small context tree with one document per context."""

from __future__ import annotations

import resource
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from orc.composition import Foundation, Services, Stores, build_runtime, extraction_limits
from orc.documents.catalog.library import DocumentLibrary
from orc.documents.intake.uploads import Upload
from orc.documents.parsing.extraction_pool import ExtractionPool, WorkerInitializer
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


def extraction_pool(
    workers: int = 0, settings: Settings | None = None, *, initializer: WorkerInitializer | None = None
) -> ExtractionPool:
    """An extraction pool under the limits of ``settings`` (default: the defaults); ``workers`` 0 parses in threads.
    Close it with ``aclose`` when it has workers."""
    settings = settings or Settings()
    limits = extraction_limits()
    return ExtractionPool(
        workers,
        settings.extraction_memory_mb << 20,
        limits=limits,
        deadline_seconds=settings.extraction_seconds,
        **({"initializer": initializer} if initializer is not None else {}),
    )


def ready_to_parse_at_full_priority(memory_bytes: int) -> None:
    """A worker initializer for tests of the deadline: the memory cap orc sets, the PDF reader imported before the
    first document, and no lower priority.

    A deadline test must fail a document by its own cost, not by the machine's load: on a busy machine (a load
    average of 25-30 on 2 cores) a one-page PDF took over 3 s in a fresh worker ten nice levels down that first
    imports pypdf."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    import pypdf  # noqa: F401  (what the first PDF would import inside its deadline)


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
