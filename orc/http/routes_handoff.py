"""Context requests of paused turns: supply, run without, cancel, read (context handoff, DESIGN §2).

``supply`` and ``run-without`` resume the paused turn and answer like ``POST /api/orc``: JSON, or the turn's events
(``Accept: application/x-ndjson`` or ``text/event-stream``), which start with ``context_resolved``. A supply that
leaves slots missing answers the request's state (``context_update`` when streaming). ``Idempotency-Key`` makes a
retried supply resume the turn once and replay its answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.datastructures import UploadFile
from starlette.responses import JSONResponse, Response, StreamingResponse

from orc.documents.extraction import extract
from orc.documents.uploads import Upload, check_uploads
from orc.errors import InvalidInput, PayloadTooLarge
from orc.graph.pause import Resumed
from orc.handoff import MAX_PAYLOADS, MAX_TEXT_CHARS, ContextUpdate, SupplyBody, SupplyPayload
from orc.http.dependencies import Caller, Context, Keys, Orc
from orc.http.idempotent import claim, idempotent, recorded_stream, replay
from orc.http.openapi_events import STREAM_RESPONSES
from orc.http.routes_orc import stream_result
from orc.http.streaming import MEDIA_TYPES, encode, negotiate
from orc.idempotency import StoredResponse
from orc.turns import ContextRequired, ContextUpdateEvent, Event, TurnResult
from orc.turns.service import Orchestrator, PreparedTurn

router = APIRouter()
_PATH = "/sessions/{session_id}/context-requests/{request_id}"
_STREAMS = STREAM_RESPONSES
_IDEMPOTENCY = [{"name": "Idempotency-Key", "in": "header", "required": False, "schema": {"type": "string"}}]
_SUPPLY_BODY = {
    "parameters": _IDEMPOTENCY,
    "requestBody": {
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/SupplyBody"}},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "slot": {"type": "string"},
                        "files": {"type": "array", "items": {"type": "string", "format": "binary"}},
                    },
                    "required": ["slot", "files"],
                }
            },
        }
    },
}


@router.post(
    f"{_PATH}/supply",
    response_model=TurnResult | ContextUpdate,
    summary="Supply context to a paused turn",
    responses=_STREAMS,
    openapi_extra=_SUPPLY_BODY,
)
async def supply(
    session_id: str, request_id: str, request: Request, orchestrator: Orc, principal: Caller, keys: Keys, files: Context
) -> Response:
    """JSON ``{"payloads": [{"slot", "text" | "document_id" | "source_ref"}]}``, or multipart with ``slot`` and
    ``files`` (their text is supplied). When every required slot has something the turn resumes and this answers
    it; otherwise the request's state. 404 ``context_request_not_found``; 409 ``context_request_resolved``,
    ``_cancelled``, ``_superseded`` or ``_expired``; 400 ``unknown_slot``; 413 / 415 for files."""
    payloads = await _payloads(request, files.max_upload_bytes)
    body = [payload.model_dump(mode="json") for payload in payloads]
    parts = {"route": "supply", "session": session_id, "request": request_id, "payloads": body}
    fmt = negotiate(request.headers.get("accept", ""))
    if fmt is None:

        async def run() -> BaseModel:
            begun = await orchestrator.begin_supply(session_id, request_id, payloads, principal)
            if isinstance(begun, ContextUpdate):
                return begun
            return await orchestrator.complete(*begun)

        return await idempotent(request, principal, keys, parts, 200, run)
    claimed = await claim(request, principal, keys, parts)
    if isinstance(claimed, StoredResponse):
        return replay(claimed)
    try:
        begun = await orchestrator.begin_supply(session_id, request_id, payloads, principal)
    except BaseException:
        if claimed is not None:
            await keys.abandon(claimed)
        raise
    if isinstance(begun, ContextUpdate):
        if claimed is not None:
            await keys.complete(claimed, 200, begun.model_dump(mode="json"))
        update = ContextUpdateEvent(
            type="context_update",
            request_id=request_id,
            status="pending",
            supplied=begun.supplied,
            missing=begun.missing,
        )
        return _streaming(_one(update), fmt)
    events = _resumed(orchestrator, *begun)
    if claimed is not None:
        events = recorded_stream(events, keys, claimed, stream_result)
    return _streaming(events, fmt)


@router.post(
    f"{_PATH}/run-without",
    response_model=TurnResult,
    summary="Answer a paused turn without the context",
    responses=_STREAMS,
    openapi_extra={"parameters": _IDEMPOTENCY},
)
async def run_without(
    session_id: str, request_id: str, request: Request, orchestrator: Orc, principal: Caller, keys: Keys
) -> Response:
    """Resume the paused turn with what it has; its answer says it went on without the requested context."""
    parts = {"route": "run-without", "session": session_id, "request": request_id}
    fmt = negotiate(request.headers.get("accept", ""))
    if fmt is None:

        async def run() -> BaseModel:
            return await orchestrator.complete(*await orchestrator.begin_run_without(session_id, request_id, principal))

        return await idempotent(request, principal, keys, parts, 200, run)
    claimed = await claim(request, principal, keys, parts)
    if isinstance(claimed, StoredResponse):
        return replay(claimed)
    try:
        turn, resume = await orchestrator.begin_run_without(session_id, request_id, principal)
    except BaseException:
        if claimed is not None:
            await keys.abandon(claimed)
        raise
    events = _resumed(orchestrator, turn, resume)
    if claimed is not None:
        events = recorded_stream(events, keys, claimed, stream_result)
    return _streaming(events, fmt)


class RequestState(BaseModel):
    """A context request: its slots, what was supplied (who, when, what) and how it ended."""

    model_config = ConfigDict(extra="allow")

    request_id: str
    conversation_id: str
    status: str


@router.post(
    f"{_PATH}/cancel",
    response_model=RequestState,
    summary="Cancel a paused turn",
    openapi_extra={"parameters": _IDEMPOTENCY},
)
async def cancel(
    session_id: str, request_id: str, request: Request, orchestrator: Orc, principal: Caller, keys: Keys
) -> Response:
    """End the request without an answer."""

    async def run() -> BaseModel:
        record = await orchestrator.cancel(session_id, request_id, principal)
        return RequestState.model_validate(record.public())

    parts = {"route": "cancel", "session": session_id, "request": request_id}
    return await idempotent(request, principal, keys, parts, 200, run)


@router.get(_PATH, response_model=RequestState, summary="Get a context request")
async def get_request(session_id: str, request_id: str, orchestrator: Orc, principal: Caller) -> JSONResponse:
    """The request with its slots, suggestions, supplies and status."""
    record, _ = await orchestrator.handoff.requests.get(principal, session_id, request_id)
    return JSONResponse(record.public())


# -- helpers ------------------------------------------------------------------------------------------------------


async def _payloads(request: Request, max_upload_bytes: int) -> list[SupplyPayload]:
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        return await _uploaded(request, max_upload_bytes)
    try:
        body = SupplyBody.model_validate_json(await request.body())
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        if any(error.get("type") == "too_long" and error.get("loc") == ("payloads",) for error in errors):
            raise PayloadTooLarge(f"at most {MAX_PAYLOADS} payloads per supply", code="too_many_payloads") from None
        detail = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in errors[:5])
        raise InvalidInput(f"the supply does not match the schema: {detail}", code="invalid_supply") from None
    return body.payloads


async def _uploaded(request: Request, max_upload_bytes: int) -> list[SupplyPayload]:
    """Multipart ``slot`` + ``files``: each file's text becomes a payload (its name kept as provenance)."""
    async with request.form(max_files=MAX_PAYLOADS, max_fields=10) as form:
        slot = form.get("slot")
        if not isinstance(slot, str) or not slot.strip():
            raise InvalidInput("send the slot the files are for in a field named 'slot'", code="missing_slot")
        uploads = []
        for part in form.getlist("files"):
            if not isinstance(part, UploadFile) or part.filename is None:
                raise InvalidInput("every 'files' part must be a file with a filename", code="invalid_upload")
            uploads.append(
                Upload(
                    filename=part.filename, data=await part.read(max_upload_bytes + 1), content_type=part.content_type
                )
            )
    if not uploads:
        raise InvalidInput("no files were uploaded; send one or more parts named 'files'", code="no_files")
    check_uploads(uploads, max_upload_bytes)  # 413 / 400 before any extraction
    payloads = []
    for upload in uploads:
        # Extraction parses untrusted bytes: off the event loop.
        document = await asyncio.to_thread(extract, upload.data, upload.filename, upload.content_type)
        text = document.text.strip()[:MAX_TEXT_CHARS]
        if not text:
            raise InvalidInput(f"{upload.filename!r} has no text to supply", code="empty_supply")
        payloads.append(SupplyPayload(slot=slot.strip(), text=text, name=upload.filename))
    return payloads


async def _resumed(orchestrator: Orchestrator, turn: PreparedTurn, resume: Resumed) -> AsyncIterator[Event]:
    async for event in orchestrator.stream_prepared(turn, resume):  # starts with context_resolved
        yield event


async def _one(event: Event) -> AsyncIterator[Event]:
    yield event


def _streaming(events: AsyncIterator[Event], fmt: Any) -> StreamingResponse:
    return StreamingResponse(
        encode(events, fmt),
        media_type=MEDIA_TYPES[fmt],
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


__all__ = ["ContextRequired", "router"]
