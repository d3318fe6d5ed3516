"""The job messages on the queues: small JSON references to catalog records, never document data."""

from __future__ import annotations

from typing import Any, Literal

from orc.documents.processing import DocumentLocation, ProcessingJob
from orc.errors import InvalidInput

JobKind = Literal["process", "digest"]
VERSION = 1


def processing_message(job: ProcessingJob) -> dict[str, Any]:
    """The ``orc-documents`` message for ``job``."""
    location = job.location
    return {
        "v": VERSION,
        "kind": "process",
        "partition_key": location.partition_key,
        "item_id": location.item_id,
        "document_id": location.document_id,
        "blob_path": location.blob_path,
        "filename": location.filename,
        "content_hash": job.content_hash,
        "content_type": job.content_type,
    }


def processing_job(body: dict[str, Any]) -> ProcessingJob:
    """The job an ``orc-documents`` message describes; :class:`InvalidInput` when it is not one."""
    try:
        location = DocumentLocation(
            partition_key=str(body["partition_key"]),
            item_id=str(body["item_id"]),
            document_id=str(body["document_id"]),
            blob_path=str(body["blob_path"]),
            filename=str(body["filename"]),
        )
        content_type = body.get("content_type")
        return ProcessingJob(location, str(body["content_hash"]), str(content_type) if content_type else None)
    except (KeyError, TypeError):
        raise InvalidInput("not a document processing job") from None


def digest_message(partition_key: str, conversation_id: str) -> dict[str, Any]:
    """The ``orc-digests`` message: refresh the digests of one session."""
    return {"v": VERSION, "kind": "digest", "partition_key": partition_key, "conversation_id": conversation_id}
