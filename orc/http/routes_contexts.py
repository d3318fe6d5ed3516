"""The context tree of the caller's organization and the documents attached to each context.

``PUT/GET /api/contexts/{type}/{id}`` create, rename and read organizations, folders and usecases;
``/api/contexts/{type}/{id}/documents`` uploads (multipart, field ``files``), lists and removes their documents.
Everything is scoped to the caller's organization: another organization's contexts and documents are 404.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Body, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse

from orc.documents.catalog.availability import context_document
from orc.documents.catalog.context_documents import UploadedDocument
from orc.documents.catalog.contexts import ContextDirectory
from orc.documents.intake.uploads import screen_uploads
from orc.documents.records import ContextRef, DocumentInfo
from orc.documents.sessions import RefusedUpload
from orc.http import roles
from orc.http.dependencies import Caller, ContextDocs, Directory
from orc.http.uploads import MULTIPART_FILES, read_uploads
from orc.principal import Principal

router = APIRouter()


class ContextBody(BaseModel):
    """Create or rename a context."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Display name.", max_length=1000)
    parent_id: str | None = Field(
        default=None,
        description="An organization has none; a folder's parent is the organization (null: the caller's); "
        "a usecase's parent is a folder.",
    )


class ContextSummary(BaseModel):
    """A context as listed among another's children."""

    type: str
    id: str
    name: str


class ContextView(BaseModel):
    """A context of the tree."""

    type: Literal["organization", "folder", "usecase"]
    id: str
    name: str
    parent_type: str | None = None
    parent_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    children: list[ContextSummary] = Field(default_factory=list)


class ContextDocumentList(BaseModel):
    """The documents attached to one context (not those it makes available through the tree)."""

    context_type: str
    context_id: str
    documents: list[DocumentInfo]


class UploadedDocumentView(DocumentInfo):
    """A document an upload touched: its listing and what the upload did to it."""

    diff: Literal["new", "changed", "unchanged"]


class UploadResult(BaseModel):
    """The documents of an upload, with their status when the response was sent."""

    context_type: str
    context_id: str
    documents: list[UploadedDocumentView]
    refused: list[RefusedUpload] = Field(
        default_factory=list, description="Files of this upload that were not stored, each with why; the rest were."
    )


async def _view(directory: ContextDirectory, principal: Principal, ref: ContextRef) -> ContextView:
    node = await directory.get(principal, ref)
    children = await directory.children(principal, ref)
    return ContextView(
        **node.model_dump(),
        children=[ContextSummary(type=child.type, id=child.id, name=child.name) for child in children],
    )


@router.put(
    "/contexts/{context_type}/{context_id}",
    response_model=ContextView,
    summary="Create or rename a context",
    responses={201: {"model": ContextView, "description": "Created"}},
)
async def put_context(
    context_type: str, context_id: str, body: Annotated[ContextBody, Body()], directory: Directory, principal: Caller
) -> JSONResponse:
    """Create (201) or rename (200) an organization, folder or usecase of the caller's organization."""
    ref = ContextRef.parse(context_type, context_id)
    await roles.require_context_change(directory, principal, ref)
    _, created = await directory.put(principal, ref, body.name, body.parent_id)
    view = await _view(directory, principal, ref)
    code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
    return JSONResponse(view.model_dump(mode="json"), status_code=code)


@router.get("/contexts/{context_type}/{context_id}", response_model=ContextView, summary="Get a context")
async def get_context(context_type: str, context_id: str, directory: Directory, principal: Caller) -> ContextView:
    """The context with its direct children."""
    return await _view(directory, principal, ContextRef.parse(context_type, context_id))


@router.post(
    "/contexts/{context_type}/{context_id}/documents",
    response_model=UploadResult,
    status_code=status.HTTP_202_ACCEPTED,
    summary="Upload documents to a context",
    openapi_extra=MULTIPART_FILES,
)
async def upload_documents(
    context_type: str, context_id: str, request: Request, documents: ContextDocs, principal: Caller
) -> UploadResult:
    """Multipart upload, field ``files``. Processing runs in the background: each document's ``status`` is as it
    was when the response was sent (``ready`` for small files, ``processing`` for big ones, ``failed`` with a
    reason when its text cannot be extracted). Poll ``GET …/documents`` for the rest."""
    ref = ContextRef.parse(context_type, context_id)
    uploads = await read_uploads(request, documents.max_upload_bytes)
    # A file orc cannot take is refused on its own (listed in `refused`); the others are stored.
    accepted, refused = screen_uploads(uploads, documents.max_upload_bytes)
    await roles.require_upload_rights(documents, principal, ref, accepted)
    touched = await documents.add(principal, ref, accepted)
    return UploadResult(
        context_type=ref.type,
        context_id=ref.id,
        documents=[_uploaded(principal, doc) for doc in touched],
        refused=refused,
    )


def _uploaded(principal: Principal, uploaded: UploadedDocument) -> UploadedDocumentView:
    info = context_document(principal.organization, uploaded.record, None).info
    return UploadedDocumentView(**info.model_dump(), diff=uploaded.diff)


@router.get(
    "/contexts/{context_type}/{context_id}/documents",
    response_model=ContextDocumentList,
    summary="List a context's documents",
)
async def list_documents(
    context_type: str, context_id: str, directory: Directory, documents: ContextDocs, principal: Caller
) -> ContextDocumentList:
    """The documents attached to this context with their processing status."""
    ref = ContextRef.parse(context_type, context_id)
    await directory.get(principal, ref)
    records = await documents.documents(principal, ref)
    return ContextDocumentList(
        context_type=ref.type,
        context_id=ref.id,
        documents=[context_document(principal.organization, record, None).info for record in records],
    )


@router.delete(
    "/contexts/{context_type}/{context_id}/documents/{document_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    summary="Remove a context's document",
)
async def delete_document(
    context_type: str, context_id: str, document_id: str, documents: ContextDocs, principal: Caller
) -> Response:
    """Remove the document: its file, its extracted text and its record."""
    ref = ContextRef.parse(context_type, context_id)
    await roles.require_document_owner(documents, principal, ref, document_id)
    await documents.remove(principal, ref, document_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
