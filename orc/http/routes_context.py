"""A session's context files (context-digest-spec §7): manifest, files, digests, upload/replace/delete, stream.

Mutations answer ``{"revision", "files": [{file_id, filename, status, digest_status, diff}], "refused": [...]}``, honour
``Idempotency-Key`` (a replay answers the first response with ``Idempotent-Replayed: true``) and
``If-Match: <revision>`` (412 when the set moved on). Digests are made in the background; follow them by polling
``GET …/context`` or with ``GET …/context/stream`` (server-sent events).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, status
from pydantic import BaseModel, Field
from starlette.responses import JSONResponse, Response, StreamingResponse

from orc.documents.intake.uploads import Upload
from orc.documents.sessions import ContextFile, ContextSet, Mutation, SessionFiles
from orc.documents.sessions.planning import EXISTS
from orc.errors import InvalidInput, NotFound
from orc.http.dependencies import Caller, Context, Conversations, Files, Keys, Requests
from orc.http.idempotent import KEY_PARAMETER, idempotent
from orc.http.uploads import MULTIPART_FILES, read_uploads

router = APIRouter()

_IF_MATCH = re.compile(r'^(?:W/)?"?(\d{1,18})"?$')
_MUTATION_HEADERS = {
    "parameters": [
        KEY_PARAMETER,
        {"name": "If-Match", "in": "header", "required": False, "schema": {"type": "string"}},
    ]
}


class DigestJson(BaseModel):
    """A digest: ``schema_version``, ``mode``, ``document``, ``summary``, ``facts`` (each with ``sources``),
    ``uncertainties`` and, for the aggregate, ``batch``."""

    model_config = {"extra": "allow"}


# -- reads ------------------------------------------------------------------------------------------------------


@router.get("/sessions/{session_id}/context", response_model=ContextSet, summary="Get a session's context set")
async def get_manifest(
    session_id: str, context: Context, sessions: Conversations, handoff: Requests, principal: Caller
) -> ContextSet:
    """Revision, files with their processing and digest statuses, the aggregate's status and the diff banner
    (``changes.text``: ``+N new, ~M changed, −K deleted`` or ``no changes``). A conversation without files (one
    that only asked, or searched a context) has the empty set, revision 0; an id that is no conversation of the
    caller's is 404 ``session_not_found``."""
    try:
        return await context.manifest(principal, session_id)
    except NotFound as exc:
        if exc.code != "session_not_found":
            raise
        try:
            await sessions.get(principal, session_id)
        except NotFound:
            # A conversation whose first question waits on its request has no stored turn, but it exists.
            if not await handoff.history(principal, session_id):
                raise exc from None
        return SessionFiles.empty_manifest(session_id)


@router.get(
    "/sessions/{session_id}/context/stream",
    summary="Follow a session's digest statuses (server-sent events)",
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def stream_manifest(session_id: str, context: Context, principal: Caller) -> StreamingResponse:
    """``event: manifest`` with the manifest each time it changes, until nothing is parsing; then
    ``event: done``. Comments (``: keep-alive``) keep idle connections open. A session without files yet can be
    followed too: its empty set (revision 0) comes first, then the set once the first upload lands."""
    try:
        first: ContextSet | None = await context.manifest(principal, session_id)
    except NotFound as exc:
        if exc.code != "session_not_found":
            raise
        first = None

    async def events() -> AsyncIterator[bytes]:
        yield b"retry: 3000\n\n"
        current = first
        if current is None:
            # Subscribe-before-upload: announce the empty set, then wait for the session to get its first file.
            empty = SessionFiles.empty_manifest(session_id)
            data = json.dumps(empty.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))
            yield f"event: manifest\nid: 0\ndata: {data}\n\n".encode()
            async for waited in context.first_manifest(principal, session_id):
                if waited is None:
                    yield b": keep-alive\n\n"
                current = waited
            if current is None:
                yield b'event: done\ndata: {"revision":0,"parsing":false}\n\n'
                return
        last = current
        async for manifest in context.watch(principal, session_id, current):
            if manifest is None:
                yield b": keep-alive\n\n"
                continue
            last = manifest
            data = json.dumps(manifest.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":"))
            yield f"event: manifest\nid: {manifest.revision}\ndata: {data}\n\n".encode()
        done = json.dumps({"revision": last.revision, "parsing": last.parsing})
        yield f"event: done\ndata: {done}\n\n".encode()

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )


@router.get("/sessions/{session_id}/context/digest", response_model=DigestJson, summary="Get the aggregate digest")
async def get_aggregate(session_id: str, context: Context, principal: Caller) -> JSONResponse:
    """The aggregate digest of the latest revision (409 ``not_ready`` while it is being made). ``ETag`` is its
    ``digest_hash``; ``X-Context-Revision`` the revision it belongs to."""
    manifest, digest = await context.aggregate(principal, session_id)
    headers = {"X-Context-Revision": str(manifest.revision)}
    if manifest.aggregate.digest_hash:
        headers["ETag"] = f'"{manifest.aggregate.digest_hash}"'
    return JSONResponse(digest, headers=headers)


@router.get(
    "/sessions/{session_id}/context/files/{file_id}", response_model=ContextFile, summary="Get a file's metadata"
)
async def get_file(session_id: str, file_id: str, context: Context, principal: Caller) -> ContextFile:
    """The file's ContextFile record: hashes, versions, processing and digest statuses."""
    return await context.file(principal, session_id, file_id)


@router.get(
    "/sessions/{session_id}/context/files/{file_id}/digest",
    response_model=DigestJson,
    summary="Get a file's digest",
)
async def get_file_digest(session_id: str, file_id: str, context: Context, principal: Caller) -> JSONResponse:
    """The per-file digest of the file's current content (409 ``not_ready`` while it is being made, 409
    ``digest_failed`` with the reason when it could not be made). ``ETag`` is its ``digest_hash``."""
    record, digest = await context.file_digest(principal, session_id, file_id)
    headers = {"ETag": f'"{record.digest_hash}"'} if record.digest_hash else {}
    return JSONResponse(digest, headers=headers)


# -- mutations -----------------------------------------------------------------------------------------------------


@router.post(
    "/sessions/{session_id}/context/files",
    response_model=Mutation,
    status_code=status.HTTP_201_CREATED,
    summary="Upload files to a session",
    openapi_extra={**MULTIPART_FILES, **_MUTATION_HEADERS},
)
async def upload_files(session_id: str, request: Request, files: Files, principal: Caller, keys: Keys) -> Response:
    """Multipart upload, field ``files`` (one or more); each file's blob name is its uploaded filename. A file
    with a known name replaces that file (``changed``, or ``unchanged`` when its content is the same)."""
    uploads = await read_uploads(request, files.max_upload_bytes)
    if_match = _if_match(request)

    async def run() -> Mutation:
        return await files.add(principal, session_id, uploads, if_match=if_match)

    parts = _request_parts("POST", session_id, None, if_match, uploads)
    return await idempotent(request, principal, keys, parts, status.HTTP_201_CREATED, run)


@router.put(
    "/sessions/{session_id}/context/files/{file_id}",
    response_model=Mutation,
    summary="Replace a file's content",
    openapi_extra={**MULTIPART_FILES, **_MUTATION_HEADERS},
)
async def replace_file(
    session_id: str, file_id: str, request: Request, files: Files, principal: Caller, keys: Keys
) -> Response:
    """Multipart, field ``files`` with exactly one file: the new content. The file keeps its id and filename."""
    uploads = await read_uploads(request, files.max_upload_bytes)
    if len(uploads) != 1:
        raise InvalidInput("send exactly one file to replace a file's content", code="too_many_files")
    if_match = _if_match(request)

    async def run() -> Mutation:
        return await files.replace(principal, session_id, file_id, uploads[0], if_match=if_match)

    parts = _request_parts("PUT", session_id, file_id, if_match, uploads)
    return await idempotent(request, principal, keys, parts, status.HTTP_200_OK, run)


@router.delete(
    "/sessions/{session_id}/context/files/{file_id}",
    response_model=Mutation,
    summary="Remove a session file",
    openapi_extra=_MUTATION_HEADERS,
)
async def delete_file(
    session_id: str, file_id: str, request: Request, files: Files, principal: Caller, keys: Keys
) -> Response:
    """Remove one file; the aggregate is rebuilt from the remaining digests."""
    if_match = _if_match(request)

    async def run() -> Mutation:
        return await files.remove(principal, session_id, file_id, if_match=if_match)

    parts = _request_parts("DELETE", session_id, file_id, if_match, [])
    return await idempotent(request, principal, keys, parts, status.HTTP_200_OK, run)


@router.post(
    "/sessions/{session_id}/context/files/{file_id}/retry-parse",
    response_model=ContextFile,
    status_code=status.HTTP_202_ACCEPTED,
    summary="Retry a file's failed digest",
)
async def retry_parse(session_id: str, file_id: str, context: Context, principal: Caller) -> ContextFile:
    """Make the file's digest again after it failed (context-digest-spec §8.2 "Retry parse"); follow it on
    ``GET …/context/stream``. A file whose digest is not failed is answered as it is (nothing to retry); a file
    whose text could not be extracted, or that is too long to summarize (``digest_error_code``: ``not_extracted``,
    ``too_long``), is refused (409 ``not_retryable``): the same content would fail again."""
    return await context.retry_parse(principal, session_id, file_id)


@router.post(
    "/sessions/{session_id}/context/digest/retry-parse",
    response_model=ContextSet,
    status_code=status.HTTP_202_ACCEPTED,
    summary="Retry the failed aggregate digest",
)
async def retry_aggregate(session_id: str, context: Context, principal: Caller) -> ContextSet:
    """Make the aggregate digest again after it failed (``aggregate_digest_status: error``, its reason in
    ``aggregate_digest_error``), from the files' digests as they are; follow it on ``GET …/context/stream``. An
    aggregate that is not failed is answered as it is (nothing to retry)."""
    return await context.retry_aggregate(principal, session_id)


class ContextSettings(BaseModel):
    """What a session's context set lets its user choose."""

    model_config = {"extra": "forbid"}

    auto_parse: bool = Field(description="Make digests as soon as the files change (the spec's default, on).")


@router.patch(
    "/sessions/{session_id}/context", response_model=ContextSet, summary="Turn a session's auto-parse on or off"
)
async def set_context_settings(
    session_id: str, settings: ContextSettings, context: Context, principal: Caller
) -> ContextSet:
    """``{"auto_parse": false}`` keeps changed files' digests ``stale`` until ``POST …/context/parse``;
    ``true`` makes what is stale at once (context-digest-spec §8.1 "Auto-parse on change")."""
    return await context.set_auto_parse(principal, session_id, settings.auto_parse)


@router.post(
    "/sessions/{session_id}/context/parse",
    response_model=ContextSet,
    status_code=status.HTTP_202_ACCEPTED,
    summary="Make a session's stale digests now",
)
async def parse_now(session_id: str, context: Context, principal: Caller) -> ContextSet:
    """Start every stale digest of the session, whatever auto-parse says; follow them on ``GET …/context/stream``."""
    return await context.parse_now(principal, session_id)


def _if_match(request: Request) -> int | None:
    """The expected revision from ``If-Match`` (``3``, ``"3"`` or ``W/"3"``); ``*``: the session must exist;
    none: any."""
    value = request.headers.get("if-match")
    if value is None:
        return None
    if value.strip() == "*":
        return EXISTS
    match = _IF_MATCH.fullmatch(value.strip())
    if match is None:
        raise InvalidInput("If-Match must be the revision to expect, e.g. If-Match: 3", code="invalid_if_match")
    return int(match.group(1))


def _request_parts(
    method: str, session_id: str, file_id: str | None, if_match: int | None, uploads: list[Upload]
) -> dict[str, Any]:
    """What identifies a mutation for ``Idempotency-Key``: the same key must come with the same parts."""
    return {
        "method": method,
        "session_id": session_id,
        "file_id": file_id,
        "if_match": if_match,
        "files": [[upload.filename, upload.sha256, upload.content_type] for upload in uploads],
    }
