"""Who may change an organization's contexts and documents: its ``admin``\\ s, and each member for what it uploaded.

Reading stays open to every member of the organization; only mutations are checked, before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from orc.documents.catalog.context_documents import ContextDocuments
from orc.documents.catalog.contexts import ContextDirectory
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.errors import Forbidden, NotFound
from orc.principal import Principal


def require_admin(principal: Principal, action: str) -> None:
    """:class:`Forbidden` (403 ``forbidden_role``) unless the principal is an admin of its organization."""
    if principal.role != "admin":
        raise Forbidden(f"only an organization admin may {action}")


async def require_context_change(directory: ContextDirectory, principal: Principal, ref: ContextRef) -> None:
    """Creating a context is open to members; renaming or moving an existing one needs an admin."""
    if principal.role == "admin":
        return
    try:
        await directory.get(principal, ref)
    except NotFound:
        return
    require_admin(principal, "rename or move an existing context")


async def require_document_owner(
    documents: ContextDocuments, principal: Principal, ref: ContextRef, document_id: str
) -> None:
    """Deleting a document needs an admin or its uploader (a missing document is left to the service's 404)."""
    if principal.role == "admin":
        return
    for record in await documents.documents(principal, ref):
        if record.document_id == document_id and record.uploaded_by != principal.user:
            require_admin(principal, "remove a document another member uploaded")


async def require_upload_rights(
    documents: ContextDocuments, principal: Principal, ref: ContextRef, uploads: Sequence[Upload]
) -> None:
    """New documents are open to members; replacing another member's document (same name) needs an admin."""
    if principal.role == "admin":
        return
    names = {upload.filename for upload in uploads}
    for record in await documents.documents(principal, ref):
        if record.filename in names and record.uploaded_by != principal.user:
            require_admin(principal, "replace a document another member uploaded")
