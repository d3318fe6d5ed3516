"""The ContextSet header of a session (context-digest-spec §3.1): revision, membership, last change, aggregate.

One catalog item per session (``sx:{conversation}``) is the commit point of every mutation: it holds the revision
and the files that belong to the set at that revision, so one conditional write changes both together and a
reader never sees a revision with another revision's files. Per-file processing and digest state lives in each
file's own record (:mod:`orc.session_files`); the header only names the files. With at most
:data:`MAX_FILES_PER_SESSION` files of about 300 bytes each, the header stays far below Cosmos DB's 2 MB item cap.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from orc.clock import utc_now

MAX_FILES_PER_SESSION = 1000

SpecDigestStatus = Literal["ready", "stale", "parsing", "error"]
"""The digest statuses of context-digest-spec §3 (the catalog's ``none`` is reported as ``stale``)."""


class Member(BaseModel):
    """A file of the set at the header's revision: its identity and the content it has at that revision."""

    file_id: str
    filename: str
    content_hash: str
    size_bytes: int
    mime_type: str
    uploaded_at: str


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
    updated_at: str | None = None


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

    def body(self) -> dict[str, Any]:
        """The stored JSON body."""
        return {"kind": "session_set", **self.model_dump(mode="json", exclude={"last_change": {"text"}})}

    def member(self, file_id: str) -> Member | None:
        """The member with this id, if the file belongs to the set."""
        return next((member for member in self.files or () if member.file_id == file_id), None)
