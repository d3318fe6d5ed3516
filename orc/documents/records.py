"""The catalog's document and context records, and the listing item every tool and route returns.

A document is either a *session* document (attached to one conversation, stored in the principal's partition by
:mod:`orc.documents.sessions`) or a *context* document (attached to an organization, folder or usecase, stored in the
organization's shared partition by :mod:`orc.documents.catalog.context_documents`). Both carry the same processing
fields, written by :mod:`orc.documents.intake.processing`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import BaseModel, Field

from orc.errors import UnknownContextType
from orc.names import validate_identifier
from orc.search.port import ScopeFields, owner_key

ContextType = Literal["organization", "folder", "usecase"]
DocumentContextType = Literal["session", "organization", "folder", "usecase"]
DocumentStatus = Literal["uploading", "processing", "ready", "failed"]
DigestStatus = Literal["none", "stale", "parsing", "ready", "error"]
DigestErrorCode = Literal["too_long", "not_extracted", "text_unavailable", "model_failed", "invalid_digest"]
"""Why a digest could not be made: ``too_long`` (more text than a summary reads) and ``not_extracted`` (the file has
no text) are permanent for the file's content, so retrying cannot help; the others may succeed on a retry."""
PERMANENT_DIGEST_ERRORS: frozenset[str] = frozenset({"too_long", "not_extracted"})
"""The :data:`DigestErrorCode` values a retry cannot change (only another content can)."""
Origin = Literal["session", "focus", "historical"]
"""Why a document is available in a scope: attached to the session, derived from the focus context, or from a
context the conversation used before (historical)."""

CONTEXT_TYPES: tuple[ContextType, ...] = get_args(ContextType)


def check_context_type(value: str) -> ContextType:
    """``value`` as a :data:`ContextType`; :class:`UnknownContextType` for anything else."""
    for known in CONTEXT_TYPES:
        if value == known:
            return known
    raise UnknownContextType(f"unknown context type {value!r}; use one of: {', '.join(CONTEXT_TYPES)}")


@dataclass(frozen=True, slots=True, order=True)
class ContextRef:
    """A context by type and id (hashable, so sets and dict keys of contexts are cheap)."""

    type: ContextType
    id: str

    @classmethod
    def parse(cls, context_type: str, context_id: str) -> ContextRef:
        """Validate both parts: :class:`UnknownContextType` or :class:`~orc.errors.InvalidName`."""
        return cls(check_context_type(context_type), validate_identifier(context_id, what="context"))

    @property
    def label(self) -> str:
        """``folder legal``: how prompts and messages name the context."""
        return f"{self.type} {self.id}"

    def as_dict(self) -> dict[str, str]:
        """``{"type": ..., "id": ...}``, the wire shape of a focus context."""
        return {"type": self.type, "id": self.id}


def session_scope(organization: str, user: str, conversation_id: str) -> ScopeFields:
    """The search scope of a document attached to a conversation."""
    session = f"{user}/{conversation_id}"
    return ScopeFields(organization=organization, owner=owner_key("session", session), session=session)


def context_scope(organization: str, context_type: str, context_id: str) -> ScopeFields:
    """The search scope of a document attached to a context."""
    return ScopeFields(
        organization=organization,
        owner=owner_key(context_type, context_id),
        folder=context_id if context_type == "folder" else None,
        usecase=context_id if context_type == "usecase" else None,
    )


def search_scope(partition_key: str, body: dict[str, object]) -> ScopeFields:
    """The search scope of a stored catalog record (a session file's or a context document's) in ``partition_key``
    (``<organization>/<user>`` or ``<organization>/contexts``)."""
    organization, _, user = partition_key.partition("/")
    if body.get("kind") == "session_file":
        return session_scope(organization, user, str(body["conversation_id"]))
    return context_scope(organization, str(body.get("context_type") or "unknown"), str(body.get("context_id") or ""))


class ProcessingFields(BaseModel):
    """What processing (extraction, spans, hashes) knows about a document; shared by both kinds of record.

    ``status`` follows ``uploading → processing → ready | failed``; ``ready`` means the text is extracted and
    spanned, so tools can read and search it. Digests (``digest_status``: ``stale | parsing → ready | error``,
    ``none`` before one was ever asked for) are a separate, later step written by :mod:`orc.digests`.
    """

    status: DocumentStatus = "ready"
    status_reason: str | None = Field(default=None, description="Why processing failed, when it did.")
    media_type: str | None = None
    extracted_text_hash: str | None = None
    spans_hash: str | None = None
    chunking_version: str | None = None
    span_count: int | None = None
    page_count: int | None = None
    extractors: dict[str, str] | None = Field(
        default=None,
        description='Which extractor produced which pages: {"pypdf": "1-3,5", "pypdfium2": "4"} (pypdfium2 reads '
        "the PDF pages whose pypdf text was degenerate, e.g. words run together).",
    )
    text_chars: int | None = None
    token_estimate: int | None = None
    digest_status: DigestStatus = "none"
    prompt_version: str | None = Field(default=None, description="Prompt version of the current per-file digest.")
    digest_hash: str | None = Field(default=None, description="sha256 of the per-file digest JSON.")
    digest_ref: str | None = Field(default=None, description="Pointer to the stored per-file digest JSON.")
    digest_key: str | None = Field(
        default=None, description="The digest's cache key: (extracted_text_hash, chunking_version, prompt_version)."
    )
    digest_error: str | None = Field(default=None, description="Why the digest could not be made, when it could not.")
    digest_error_code: DigestErrorCode | None = Field(
        default=None,
        description="digest_error as a stable code: too_long and not_extracted are permanent for this content (a "
        "retry cannot help); text_unavailable, model_failed and invalid_digest may succeed on a retry.",
    )
    digest_updated_at: str | None = None
    processed_at: str | None = None


class ContextDocument(ProcessingFields):
    """A document attached to an organization, folder or usecase (catalog item ``cd:{type}:{id}:{document_id}``)."""

    document_id: str
    filename: str
    context_type: ContextType
    context_id: str
    size_bytes: int
    content_type: str
    content_hash: str
    uploaded_by: str
    created_at: str
    updated_at: str


class ContextNode(BaseModel):
    """One node of an organization's context tree (organization → folder → usecase)."""

    type: ContextType
    id: str
    name: str
    parent_type: ContextType | None = None
    parent_id: str | None = None
    created_at: str | None = None
    updated_at: str | None = None

    @property
    def ref(self) -> ContextRef:
        """This node as a :class:`ContextRef`."""
        return ContextRef(self.type, self.id)

    @property
    def parent(self) -> ContextRef | None:
        """The parent node, if any."""
        if self.parent_type is None or self.parent_id is None:
            return None
        return ContextRef(self.parent_type, self.parent_id)


class DocumentInfo(BaseModel):
    """A document as ``documents.list`` and the context routes list it."""

    document_id: str
    filename: str
    context_type: DocumentContextType
    context_id: str
    status: DocumentStatus
    status_reason: str | None = None
    has_summary: bool = False
    digest_status: DigestStatus = "none"
    digest_error_code: DigestErrorCode | None = Field(
        default=None,
        description="Why the summary could not be made, as a stable code: too_long and not_extracted mean this "
        "content will never have one; text_unavailable, model_failed and invalid_digest may succeed on a retry.",
    )
    size_bytes: int
    token_estimate: int | None = None
    media_type: str | None = None
    page_count: int | None = None
    span_count: int | None = None
    extractors: dict[str, str] | None = Field(
        default=None, description='Which extractor produced which pages: {"pypdf": "1-3,5", "pypdfium2": "4"}.'
    )
    origin: Origin | None = Field(
        default=None, description="session, focus or historical: why the document is available (listings only)."
    )
    created_at: str
    updated_at: str


def estimate_tokens(chars: int) -> int:
    """About four characters per token: enough to budget prompts without a tokenizer."""
    return (chars + 3) // 4
