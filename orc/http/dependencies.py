"""Request-scoped dependencies: the process's services built in the lifespan, and the authenticated principal.

They are coroutines although they never wait: FastAPI runs a plain ``def`` dependency in its thread pool, a
thread hop per dependency per request, which under 100 concurrent turns cost more than the turns' own work.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from orc.composition import Services
from orc.digests.context import ContextFiles
from orc.documents.context_documents import ContextDocuments
from orc.documents.contexts import ContextDirectory
from orc.documents.intake import FileTexts
from orc.documents.scopes import DocumentScopes
from orc.documents.sessions import SessionFiles
from orc.errors import ServiceUnavailable
from orc.handoff import Handoff, SessionArtifacts
from orc.idempotency import IdempotencyKeys
from orc.principal import Principal
from orc.sessions import Sessions
from orc.turns.service import Orchestrator


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


async def orchestrator(built: AppServices) -> Orchestrator:
    """Turns, their context requests, and deleting a conversation."""
    return built.orchestrator


async def sessions(built: AppServices) -> Sessions:
    """The caller's conversations."""
    return built.foundation.sessions


async def session_files(built: AppServices) -> SessionFiles:
    """The files attached to each conversation."""
    return built.foundation.session_files


async def directory(built: AppServices) -> ContextDirectory:
    """The context tree."""
    return built.foundation.directory


async def context_documents(built: AppServices) -> ContextDocuments:
    """The documents attached to contexts."""
    return built.foundation.context_documents


async def scopes(built: AppServices) -> DocumentScopes:
    """What a scope makes available."""
    return built.foundation.scopes


async def context_files(built: AppServices) -> ContextFiles:
    """A session's context files with their digests."""
    return built.documents.context_files


async def artifacts(built: AppServices) -> SessionArtifacts:
    """A session's artifacts (what can be supplied to a context request)."""
    return built.artifacts


async def file_texts(built: AppServices) -> FileTexts:
    """The text of files supplied to a context request (the intake pipeline)."""
    return built.foundation.file_texts


async def idempotency(built: AppServices) -> IdempotencyKeys:
    """``Idempotency-Key`` records of mutating requests."""
    return built.foundation.idempotency


async def handoff(built: AppServices) -> Handoff:
    """The context requests of paused turns."""
    return built.handoff


Orc = Annotated[Orchestrator, Depends(orchestrator)]
Conversations = Annotated[Sessions, Depends(sessions)]
Files = Annotated[SessionFiles, Depends(session_files)]
Directory = Annotated[ContextDirectory, Depends(directory)]
ContextDocs = Annotated[ContextDocuments, Depends(context_documents)]
Scopes = Annotated[DocumentScopes, Depends(scopes)]
Requests = Annotated[Handoff, Depends(handoff)]
Context = Annotated[ContextFiles, Depends(context_files)]
Artifacts = Annotated[SessionArtifacts, Depends(artifacts)]
Keys = Annotated[IdempotencyKeys, Depends(idempotency)]
Texts = Annotated[FileTexts, Depends(file_texts)]
