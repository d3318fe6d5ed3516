"""Where a session's files are stored: catalog item ids, the header's id, blob paths and the stored record body.

Kept apart from the service so that the availability model can locate a session document without the service.
"""

from __future__ import annotations

from typing import Any

from orc.documents.intake.processing import DocumentLocation
from orc.documents.sessions.models import ContextFile
from orc.names import BlobPaths
from orc.principal import Principal


def record_prefix(conversation_id: str) -> str:
    """The id prefix of the conversation's file records in the catalog."""
    return f"sf:{conversation_id}:"


def header_id(conversation_id: str) -> str:
    """The catalog id of the conversation's ContextSet header."""
    return f"sx:{conversation_id}"


def session_location(principal: Principal, conversation_id: str, record: ContextFile) -> DocumentLocation:
    """Where a session document's record, text and blob are."""
    return DocumentLocation(
        partition_key=principal.partition_key,
        item_id=record_prefix(conversation_id) + record.file_id,
        document_id=record.file_id,
        blob_path=BlobPaths.session_blob(principal.organization, principal.user, conversation_id, record.filename),
        filename=record.filename,
    )


def record_body(conversation_id: str, record: ContextFile) -> dict[str, Any]:
    """The stored catalog body of a file record."""
    return {"kind": "session_file", "conversation_id": conversation_id, **record.model_dump(mode="json")}
