"""Conversations of the caller and the files attached to them."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, status
from pydantic import BaseModel
from starlette.datastructures import UploadFile
from starlette.responses import Response

from orc.conversations import ConversationSummary
from orc.errors import InvalidInput
from orc.http import dependencies
from orc.orchestrator import Orchestrator
from orc.principal import Principal
from orc.session_files import Manifest, Mutation, Upload

router = APIRouter()

Orc = Annotated[Orchestrator, Depends(dependencies.orchestrator)]
Caller = Annotated[Principal, Depends(dependencies.principal)]

MAX_FILES_PER_UPLOAD = 20


class SessionList(BaseModel):
    """The caller's conversations, most recent first."""

    sessions: list[ConversationSummary]


class SessionHistory(BaseModel):
    """A conversation's full history as messages in order."""

    conversation_id: str
    title: str
    messages: list[dict[str, Any]]


@router.get("/sessions", response_model=SessionList, summary="List your conversations")
async def list_sessions(orchestrator: Orc, principal: Caller) -> SessionList:
    """Title, message count, created and last-updated times of each conversation."""
    return SessionList(sessions=await orchestrator.list_sessions(principal))


@router.get("/sessions/{session_id}", response_model=SessionHistory, summary="Get a conversation")
async def get_session(session_id: str, orchestrator: Orc, principal: Caller) -> SessionHistory:
    """Every message with its citations, tool calls and file references."""
    turns = await orchestrator.get_session(session_id, principal)
    summary = await orchestrator.conversations.get(principal, session_id)
    messages: list[dict[str, Any]] = []
    for turn in turns:
        messages.append(turn.user.model_dump(mode="json"))
        messages.append(turn.assistant.model_dump(mode="json"))
    return SessionHistory(conversation_id=session_id, title=summary.title if summary else "", messages=messages)


@router.delete("/sessions/{session_id}", status_code=status.HTTP_204_NO_CONTENT, summary="Delete a conversation")
async def delete_session(session_id: str, orchestrator: Orc, principal: Caller) -> Response:
    """Delete the conversation, its files and its checkpoints."""
    await orchestrator.delete_session(session_id, principal)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/sessions/{session_id}/context", response_model=Manifest, summary="List a session's files")
async def get_manifest(session_id: str, orchestrator: Orc, principal: Caller) -> Manifest:
    """The session's files at its latest revision."""
    return await orchestrator.files.manifest(principal, session_id)


@router.post(
    "/sessions/{session_id}/context/files",
    response_model=Mutation,
    status_code=status.HTTP_201_CREATED,
    summary="Upload files to a session",
    openapi_extra={
        "requestBody": {
            "content": {
                "multipart/form-data": {
                    "schema": {
                        "type": "object",
                        "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"}}},
                        "required": ["files"],
                    }
                }
            },
            "required": True,
        }
    },
)
async def upload_files(session_id: str, request: Request, orchestrator: Orc, principal: Caller) -> Mutation:
    """Multipart upload, field ``files`` (one or more); each file's blob name is its uploaded filename."""
    uploads = await _read_uploads(request, orchestrator.files.max_upload_bytes)
    return await orchestrator.files.add(principal, session_id, uploads)


@router.delete(
    "/sessions/{session_id}/context/files/{file_id}", response_model=Mutation, summary="Remove a session file"
)
async def delete_file(session_id: str, file_id: str, orchestrator: Orc, principal: Caller) -> Mutation:
    """Remove one file; the response carries the new revision."""
    return await orchestrator.files.remove(principal, session_id, file_id)


async def _read_uploads(request: Request, max_upload_bytes: int) -> list[Upload]:
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise InvalidInput("send the files as multipart/form-data in parts named 'files'", code="not_multipart")
    async with request.form(max_files=MAX_FILES_PER_UPLOAD, max_fields=50) as form:
        uploads = []
        for part in form.getlist("files"):
            if not isinstance(part, UploadFile) or part.filename is None:
                raise InvalidInput("every 'files' part must be a file with a filename", code="invalid_upload")
            data = await part.read(max_upload_bytes + 1)
            uploads.append(Upload(filename=part.filename, data=data, content_type=part.content_type))
    if not uploads:
        raise InvalidInput("no files were uploaded; send one or more parts named 'files'", code="no_files")
    return uploads
