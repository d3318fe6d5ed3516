"""The job messages on the queues: small JSON references to catalog records, never document data."""

from __future__ import annotations

from typing import Any, Literal

from orc.documents.intake.processing import ProcessingJob
from orc.errors import InvalidInput

JobKind = Literal["process", "digest"]
VERSION = 1


def processing_message(job: ProcessingJob) -> dict[str, Any]:
    """The ``orc-documents`` message for ``job``."""
    return {"v": VERSION, "kind": "process", **job.as_json()}


def processing_job(body: dict[str, Any]) -> ProcessingJob:
    """The job an ``orc-documents`` message describes; :class:`InvalidInput` when it is not one."""
    try:
        return ProcessingJob.from_json(body)
    except (KeyError, TypeError):
        raise InvalidInput("not a document processing job") from None


def digest_message(partition_key: str, conversation_id: str) -> dict[str, Any]:
    """The ``orc-digests`` message: refresh the digests of one session."""
    return {"v": VERSION, "kind": "digest", "partition_key": partition_key, "conversation_id": conversation_id}
