"""The data of a session's files: the spec's models (context-digest-spec §3) and the stored ContextSet header.

One catalog item per session (``sx:{conversation}``, a :class:`SessionHeader`) is the commit point of every
mutation: it holds the revision and the files that belong to the set at that revision (:class:`Member`), so one
conditional write changes both together and a reader never sees a revision with another revision's files.
Per-file processing and digest state lives in each file's own record (:class:`ContextFile`); the header only
names the files. With at most :data:`MAX_FILES_PER_SESSION` files of about 300 bytes each, the header stays far
below Cosmos DB's 2 MB item cap.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from orc.clock import utc_now
from orc.documents.intake.uploads import RefusedUpload
from orc.documents.records import DigestErrorCode, ProcessingFields

MAX_FILES_PER_SESSION = 1000

SpecDigestStatus = Literal["ready", "stale", "parsing", "error"]
"""The digest statuses of context-digest-spec §3 (the catalog's ``none`` is reported as ``stale``)."""

Diff = Literal["new", "changed", "unchanged", "deleted"]
"""What a mutation did to one file."""

__all__ = [
    "MAX_FILES_PER_SESSION",
    "AggregateState",
    "ChangeSummary",
    "ContextFile",
    "ContextSet",
    "Diff",
    "FileChange",
    "Member",
    "Mutation",
    "SessionHeader",
    "SpecDigestStatus",
    "spec_digest_status",
]


def spec_digest_status(status: str) -> SpecDigestStatus:
    """A stored digest status as the spec names it: ``none`` (never asked for) is ``stale``."""
    if status in ("ready", "parsing", "error"):
        return status  # type: ignore[return-value]
    return "stale"


# -- the spec's models ---------------------------------------------------------------------------------------------


class ContextFile(ProcessingFields):
    """A session document (context-digest-spec §3.2 ContextFile): identity, hashes, processing and digest state.

    The spec's fields are ``file_id``, ``filename``, ``mime_type``, ``size_bytes``, ``uploaded_at``,
    ``content_hash``, ``extracted_text_hash``, ``chunking_version``, ``spans_hash``, ``prompt_version``,
    ``digest_status``, ``digest_hash`` and ``digest_ref``; ``status`` is the text-processing status besides.
    """

    file_id: str
    filename: str
    size_bytes: int
    content_type: str
    content_hash: str
    created_at: str
    updated_at: str
    uploaded_at: str | None = Field(default=None, description="When the current content was uploaded.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mime_type(self) -> str:
        """The media type the file was uploaded with."""
        return self.content_type


class FileChange(BaseModel):
    """What a mutation did to one file."""

    file_id: str
    filename: str
    status: str
    digest_status: SpecDigestStatus
    diff: Diff


class Mutation(BaseModel):
    """The result of an upload, replace or delete: the new revision and the files it touched."""

    revision: int
    files: list[FileChange]
    refused: list[RefusedUpload] = Field(
        default_factory=list, description="Files of this upload that were not stored, each with why; the rest were."
    )


class ChangeSummary(BaseModel):
    """What the latest mutation did (the diff banner of spec §8.1)."""

    revision: int = Field(description="The revision the mutation left the set at.")
    new: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def text(self) -> str:
        """``+N new, ~M changed, −K deleted``, or ``no changes`` when the mutation changed nothing."""
        if not (self.new or self.changed or self.deleted):
            return "no changes"
        return f"+{self.new} new, ~{self.changed} changed, −{self.deleted} deleted"


class AggregateState(BaseModel):
    """Where the session's aggregate digest stands, and which per-file digests it was built from."""

    status: SpecDigestStatus = "stale"
    ref: str | None = Field(default=None, description="Pointer to the stored aggregate digest JSON.")
    digest_hash: str | None = None
    inputs: str | None = Field(
        default=None,
        description="Fingerprint of the (file, digest_hash) pairs and prompt the aggregate was built from.",
    )
    revision: int | None = Field(default=None, description="The set's revision when the aggregate was stored.")
    files: int = Field(default=0, description="How many per-file digests went into the aggregate.")
    error: str | None = None
    error_code: DigestErrorCode | None = None
    updated_at: str | None = None


class ContextSet(BaseModel):
    """A session's context set at its latest revision (context-digest-spec §3.1) with the §8.1 banner data."""

    context_set_id: str
    session_id: str
    revision: int
    updated_at: str
    files: list[ContextFile] = Field(default_factory=list)
    aggregate_digest_status: SpecDigestStatus = "stale"
    aggregate_digest_ref: str | None = None
    aggregate_digest_error: str | None = None
    aggregate_digest_error_code: DigestErrorCode | None = Field(
        default=None, description="aggregate_digest_error as a stable code (model_failed or invalid_digest)."
    )
    changes: ChangeSummary = Field(description="What the latest mutation did: the diff banner.")
    parsing: bool = Field(default=False, description="Whether a digest (per-file or aggregate) is being made now.")
    auto_parse: bool = Field(
        default=True,
        description="Whether a change starts its digests (the spec's 'Auto-parse on change' toggle, §8.1). Off: "
        "changed files' digests stay stale until POST …/context/parse.",
    )
    aggregate: AggregateState = Field(default_factory=AggregateState, exclude=True)
    """The stored aggregate state (its inputs decide whether it still matches the files); not part of the JSON."""


# -- the stored header ---------------------------------------------------------------------------------------------


class Member(BaseModel):
    """A file of the set at the header's revision: its identity and the content it has at that revision."""

    file_id: str
    filename: str
    content_hash: str
    size_bytes: int
    mime_type: str
    uploaded_at: str


class SessionHeader(BaseModel):
    """The stored header item of a session's context set."""

    conversation_id: str
    context_set_id: str = Field(default_factory=lambda: f"cs-{uuid.uuid4().hex}")
    revision: int = 0
    updated_at: str = Field(default_factory=utc_now)
    files: list[Member] | None = Field(
        default=None, description="The members at this revision; None on headers written before membership was kept."
    )
    last_change: ChangeSummary | None = None
    aggregate: AggregateState = Field(default_factory=AggregateState)
    auto_parse: bool = True

    def body(self) -> dict[str, Any]:
        """The stored JSON body."""
        return {"kind": "session_set", **self.model_dump(mode="json", exclude={"last_change": {"text"}})}

    def member(self, file_id: str) -> Member | None:
        """The member with this id, if the file belongs to the set."""
        return next((member for member in self.files or () if member.file_id == file_id), None)
