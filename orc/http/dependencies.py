"""Request-scoped dependencies: the process's services built in the lifespan, and the authenticated principal.

They are coroutines although they never wait: FastAPI runs a plain ``def`` dependency in its thread pool, a
thread hop per dependency per request, which under 100 concurrent turns cost more than the turns' own work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

from fastapi import Depends, Request

from orc.composition import Services
from orc.digests.context import ContextFiles
from orc.documents.catalog.context_documents import ContextDocuments
from orc.documents.catalog.contexts import ContextDirectory
from orc.documents.catalog.sources import DocumentSources
from orc.documents.intake.supplied import FileTexts
from orc.documents.sessions import SessionFiles
from orc.errors import ServiceUnavailable
from orc.handoff import Handoff, SessionArtifacts
from orc.idempotency import IdempotencyKeys
from orc.principal import Principal
from orc.sessions import Sessions
from orc.turns.service import Orchestrator

T = TypeVar("T")


async def services(request: Request) -> Services:
    """The process's services (built once in the app lifespan)."""
    built: Services | None = getattr(request.app.state, "services", None)
    if built is None:
        # Only reachable while the lifespan starts or after it ended (an embedding that skipped it).
        raise ServiceUnavailable("the service is starting; retry", code="starting", retry_after=1)
    return built


async def principal(request: Request) -> Principal:
    """The caller, from the configured authenticator."""
    return request.app.state.authenticator.authenticate(request.headers)


AppServices = Annotated[Services, Depends(services)]
Caller = Annotated[Principal, Depends(principal)]


def _part(get: Callable[[Services], T]) -> Callable[[Services], Awaitable[T]]:
    """A dependency on one service of the built process."""

    async def dependency(built: AppServices) -> T:
        return get(built)

    return dependency


Orc = Annotated[Orchestrator, Depends(_part(lambda built: built.orchestrator))]
Conversations = Annotated[Sessions, Depends(_part(lambda built: built.foundation.sessions))]
Files = Annotated[SessionFiles, Depends(_part(lambda built: built.foundation.session_files))]
Directory = Annotated[ContextDirectory, Depends(_part(lambda built: built.foundation.directory))]
ContextDocs = Annotated[ContextDocuments, Depends(_part(lambda built: built.foundation.context_documents))]
Texts = Annotated[FileTexts, Depends(_part(lambda built: built.foundation.file_texts))]
Sources = Annotated[DocumentSources, Depends(_part(lambda built: built.foundation.sources))]
Keys = Annotated[IdempotencyKeys, Depends(_part(lambda built: built.foundation.idempotency))]
Context = Annotated[ContextFiles, Depends(_part(lambda built: built.documents.context_files))]
Requests = Annotated[Handoff, Depends(_part(lambda built: built.handoff))]
Artifacts = Annotated[SessionArtifacts, Depends(_part(lambda built: built.artifacts))]
