"""The ``session.*`` tools: attach a document to a session, list the session's documents with status, remove one.

Session documents are the conversation's attached files (the same records as ``/api/sessions/{id}/context``);
an attached document goes through the same pipeline as an upload and is available to every document tool of the
session as soon as it is ready. Sessions belong to the caller: another user's session id finds nothing.
"""

from __future__ import annotations

import base64
import binascii
import functools
from typing import Annotated, Literal

from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

from mcp_server.tools.rendering import document_line
from mcp_server.tools.scoped import principal_tool
from orc.documents.catalog.availability import DocumentScope
from orc.documents.catalog.scopes import DocumentScopes
from orc.documents.intake.uploads import Upload
from orc.documents.records import DocumentInfo
from orc.documents.sessions import FileChange, SessionFiles
from orc.errors import InvalidInput, PayloadTooLarge
from orc.names import validate_identifier
from orc.principal import Principal
from orc.tool_contract import SESSION_ATTACH_DOCUMENT, SESSION_LIST_DOCUMENTS, SESSION_REMOVE_DOCUMENT

SessionId = Annotated[str, Field(description="The conversation (session) id.")]


class SessionDocuments(BaseModel):
    """The documents attached to a session, with their processing status."""

    session_id: str
    revision: int
    documents: list[DocumentInfo]


class SessionChange(BaseModel):
    """What attaching or removing did: the session's new revision and the document touched."""

    session_id: str
    revision: int
    change: FileChange
    document: DocumentInfo | None = Field(default=None, description="The attached document as listed now.")


def register(server: FastMCP, files: SessionFiles, scopes: DocumentScopes) -> None:
    """Add the three ``session.*`` tools to ``server``, over the session ``files`` and what ``scopes`` make
    available."""
    tool = functools.partial(principal_tool, server)

    @tool(
        name=SESSION_ATTACH_DOCUMENT,
        title="Attach a document to the session",
        description=(
            "Attach a document to the conversation (same name again replaces it). It is processed right away; "
            "the result gives its status (ready, or processing for big files, or failed with the reason)."
        ),
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
        ),
        failure="attaching the document failed",
        render=render_change,
    )
    async def session_attach_document(
        principal: Principal,
        session_id: SessionId,
        filename: Annotated[str, Field(description="The document's file name (its type comes from the extension).")],
        content: Annotated[str, Field(description="The document: plain text, or base64 with encoding='base64'.")],
        encoding: Annotated[Literal["text", "base64"], Field(description="How content is encoded.")] = "text",
        content_type: Annotated[str | None, Field(description="The media type, when the name does not say.")] = None,
    ) -> SessionChange:
        validate_identifier(session_id, what="session")
        data = _decode(content, encoding, files.max_upload_bytes)
        return await attach_upload(files, scopes, principal, session_id, Upload(filename, data, content_type))

    @tool(
        name=SESSION_LIST_DOCUMENTS,
        title="List the session's documents",
        description="List the documents attached to the conversation with their status (uploading, processing, "
        "ready, failed).",
        annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False),
        failure="listing the session's documents failed",
        render=_render_session_documents,
    )
    async def session_list_documents(principal: Principal, session_id: SessionId) -> SessionDocuments:
        manifest = await files.manifest(principal, session_id)
        availability = await scopes.available(principal, DocumentScope(session_id=session_id))
        documents = [document.info for document in availability.documents]
        return SessionDocuments(session_id=session_id, revision=manifest.revision, documents=documents)

    @tool(
        name=SESSION_REMOVE_DOCUMENT,
        title="Remove a document from the session",
        description="Remove one attached document from the conversation (its text and file are deleted).",
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=False
        ),
        failure="removing the document failed",
        render=lambda result: f"removed {result.change.filename} (session revision {result.revision})",
    )
    async def session_remove_document(
        principal: Principal,
        session_id: SessionId,
        document_id: Annotated[str, Field(description="The document_id to remove.")],
    ) -> SessionChange:
        mutation = await files.remove(principal, session_id, document_id)
        return SessionChange(session_id=session_id, revision=mutation.revision, change=mutation.files[0])


def _decode(content: str, encoding: str, max_bytes: int) -> bytes:
    if encoding == "text":
        data = content.encode("utf-8")
    else:
        if len(content) > (max_bytes * 4) // 3 + 4:
            raise PayloadTooLarge(f"the document is larger than the upload limit of {max_bytes} bytes")
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidInput("content is not valid base64; send encoding='text' for plain text") from None
    if len(data) > max_bytes:
        raise PayloadTooLarge(f"the document is larger than the upload limit of {max_bytes} bytes")
    return data


async def attach_upload(
    files: SessionFiles, scopes: DocumentScopes, principal: Principal, session_id: str, upload: Upload
) -> SessionChange:
    """Attach one file to the session, as an upload is; the change and the document as listed now."""
    mutation = await files.add(principal, session_id, [upload])
    (change,) = mutation.files
    listed = await scopes.available(principal, DocumentScope(session_id=session_id))
    found = listed.find(change.file_id)
    return SessionChange(
        session_id=session_id, revision=mutation.revision, change=change, document=found.info if found else None
    )


def render_change(result: SessionChange) -> str:
    """``lease.pdf: added, status ready (session revision 2)``."""
    return (
        f"{result.change.filename}: {result.change.diff}, status {result.change.status} "
        f"(session revision {result.revision})"
    )


def _render_session_documents(result: SessionDocuments) -> str:
    lines = [f"session {result.session_id}, revision {result.revision}: {len(result.documents)} document(s)"]
    lines.extend(document_line(document) for document in result.documents)
    return "\n".join(lines)
