"""Context requests of paused turns: supply, run without, cancel, read (context handoff, DESIGN §2).

``supply`` and ``run-without`` resume the paused turn and answer like ``POST /api/orc``: JSON, or the turn's events
(``Accept: application/x-ndjson`` or ``text/event-stream``), which start with ``context_resolved``. A supply that
leaves slots missing answers the request's state (``context_update`` when streaming). ``Idempotency-Key`` makes a
retried supply resume the turn once and replay its answer.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails
from starlette.responses import JSONResponse, Response

from orc.documents.intake.supplied import FileTexts
from orc.errors import InvalidInput, InvalidName, OrcError, PayloadTooLarge
from orc.handoff import (
    MAX_PAYLOADS,
    MAX_TEXT_CHARS,
    ContextUpdate,
    SuppliedText,
    SupplyBody,
    SupplyPayload,
    running_without,
    supplying,
)
from orc.http.dependencies import Caller, Keys, Orc, Requests, Texts
from orc.http.idempotent import KEY_PARAMETER, idempotent
from orc.http.openapi_events import STREAM_RESPONSES
from orc.http.turn_responses import turn_response
from orc.http.uploads import read_multipart
from orc.principal import Principal
from orc.turns import ContextRequired, TurnResult

router = APIRouter()
_PATH = "/sessions/{session_id}/context-requests/{request_id}"
_STREAMS = STREAM_RESPONSES
_IDEMPOTENCY = [KEY_PARAMETER]
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
    session_id: str,
    request_id: str,
    request: Request,
    orchestrator: Orc,
    principal: Caller,
    keys: Keys,
    texts: Texts,
    handoff: Requests,
) -> Response:
    """JSON ``{"payloads": [{"slot", "text" | "document_id" | "source_ref"}]}``, or multipart with ``slot`` and
    ``files`` (their text is supplied). When every required slot has something the turn resumes and this answers
    it; otherwise the request's state. 404 ``context_request_not_found``; 409 ``context_request_resolved``,
    ``_cancelled``, ``_superseded`` or ``_expired``; 400 ``unknown_slot``; 413 / 415 for files."""
    # The request first, before a byte of the body is read: a supply to a request that is unknown or over costs
    # no upload and no extraction. A retry under an Idempotency-Key may find it over (its first answer replays).
    if request.headers.get("idempotency-key") is None:
        await handoff.supplyable(principal, session_id, request_id)
    else:
        await handoff.request(principal, session_id, request_id)
    payloads = await _payloads(request, texts, principal)
    body = [payload.model_dump(mode="json") for payload in payloads]
    parts = {"route": "supply", "session": session_id, "request": request_id, "payloads": body}
    move = supplying(principal, session_id, request_id, payloads)
    return await turn_response(request, principal, keys, parts, lambda: orchestrator.resume(principal, move))


@router.post(
    f"{_PATH}/run-without",
    response_model=TurnResult,
    summary="Answer a paused turn without the context",
    responses=_STREAMS,
    openapi_extra={"parameters": _IDEMPOTENCY},
)
async def run_without(
    session_id: str,
    request_id: str,
    request: Request,
    orchestrator: Orc,
    principal: Caller,
    keys: Keys,
) -> Response:
    """Resume the paused turn with what it has; its answer says it went on without the requested context."""
    parts = {"route": "run-without", "session": session_id, "request": request_id}
    move = running_without(principal, session_id, request_id)
    return await turn_response(request, principal, keys, parts, lambda: orchestrator.resume(principal, move))


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
    session_id: str, request_id: str, request: Request, handoff: Requests, principal: Caller, keys: Keys
) -> Response:
    """End the request without an answer."""

    async def run() -> BaseModel:
        record = await handoff.cancel(principal, session_id, request_id)
        return RequestState.model_validate(record.public())

    parts = {"route": "cancel", "session": session_id, "request": request_id}
    return await idempotent(request, principal, keys, parts, 200, run)


@router.get(_PATH, response_model=RequestState, summary="Get a context request")
async def get_request(session_id: str, request_id: str, handoff: Requests, principal: Caller) -> JSONResponse:
    """The request with its slots, suggestions, supplies and status."""
    return JSONResponse((await handoff.request(principal, session_id, request_id)).public())


# -- helpers ------------------------------------------------------------------------------------------------------


async def _payloads(request: Request, texts: FileTexts, principal: Principal) -> list[SupplyPayload]:
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        return await _uploaded(request, texts, principal)
    try:
        body = SupplyBody.model_validate_json(await request.body())
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        raise _refusal(errors) from None
    return list(body.payloads)


def _refusal(errors: list[ErrorDetails]) -> OrcError:
    """The refusal of a JSON supply the contract refuses: when each thing wrong with it has a code of its own (the
    code the handoff gives such a payload), the first one; else ``invalid_supply`` with what did not match."""
    specific = [_specific(error) for error in errors]
    first = specific[0] if specific else None
    if first is not None and all(refusal is not None for refusal in specific):
        return first
    detail = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}" for e in errors[:5])
    return InvalidInput(f"the supply does not match the schema: {detail}", code="invalid_supply")


def _specific(error: ErrorDetails) -> OrcError | None:
    kind, where = error.get("type", ""), error.get("loc", ())
    if where == ("payloads",) and kind == "too_long":
        return PayloadTooLarge(f"at most {MAX_PAYLOADS} payloads per supply", code="too_many_payloads")
    if where == ("payloads",) and kind == "too_short":
        return InvalidInput("supply at least one payload", code="no_payloads")
    field = where[-1] if where else None
    if field == "text" and kind == "string_too_long":
        return PayloadTooLarge(f"a supplied text has at most {MAX_TEXT_CHARS} characters", limit=MAX_TEXT_CHARS)
    if field == "text" and kind == "string_pattern_mismatch":
        return InvalidInput("a supplied text is empty", code="empty_supply")
    if field == "document_id" and kind.startswith("string_"):
        return InvalidName("a document id is 1-128 letters, digits, '_', '-', '.', '@' (see documents.list)")
    if field == "source_ref" and kind.startswith("string_"):
        return InvalidInput(
            "source_ref must be a ref from a search result: a document's name and a span id joined by '::' "
            "(lease.pdf::S3)",
            code="invalid_source_ref",
        )
    return None


async def _uploaded(request: Request, texts: FileTexts, principal: Principal) -> list[SupplyPayload]:
    """Multipart ``slot`` + ``files``: each file's text becomes a payload (its name kept as provenance). The files
    go through the intake pipeline (checks, the upload window, the extraction pool), as uploads do."""
    uploads, fields = await read_multipart(request, texts.max_upload_bytes, max_files=MAX_PAYLOADS, fields=["slot"])
    slot = fields.get("slot", "").strip()
    if not slot:
        raise InvalidInput("send the slot the files are for in a field named 'slot'", code="missing_slot")
    payloads: list[SupplyPayload] = []
    for read in await texts.read(principal, uploads):
        text = read.text.strip()  # over the slot's limit it is refused by the supply, never cut
        if not text:
            raise InvalidInput(f"{read.filename!r} has no text to supply", code="empty_supply")
        payloads.append(SuppliedText(slot=slot, text=text, name=read.filename))
    return payloads


__all__ = ["ContextRequired", "router"]
