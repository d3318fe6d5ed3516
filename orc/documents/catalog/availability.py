"""The availability model: which documents a scope makes available. One function, used by every tool and the prompt.

chat-tools-evolution "Documents Availability Model": the session's documents always; then what the focus context
derives (:func:`orc.documents.catalog.contexts.derive_contexts`); then, when asked, what the conversation's historical
contexts derived. Each document says why it is available (``origin``: session, focus or historical) and where
it comes from (``context_type``/``context_id``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol

from orc.documents.catalog.context_documents import context_location
from orc.documents.catalog.contexts import ContextDirectory, derive_contexts
from orc.documents.intake.processing import DocumentLocation
from orc.documents.records import ContextDocument, ContextRef, DocumentContextType, DocumentInfo, Origin
from orc.documents.sessions.locations import session_location
from orc.documents.sessions.models import ContextFile
from orc.principal import Principal


class SessionDocuments(Protocol):
    """What availability needs from the session files: the records of one conversation."""

    async def files(self, principal: Principal, conversation_id: str) -> list[ContextFile]: ...


class ContextDocumentReader(Protocol):
    """What availability needs from the context documents: the records of a set of contexts."""

    async def in_contexts(self, organization: str, refs: Sequence[ContextRef]) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class DocumentScope:
    """Who asks about which documents: the session, the focus context and the historical contexts.

    Built from validated values only (see :meth:`orc.documents.catalog.library.DocumentLibrary.resolve_scope`).
    """

    session_id: str | None = None
    focus: ContextRef | None = None
    historical: tuple[ContextRef, ...] = ()
    include_historical: bool = False


@dataclass(frozen=True, slots=True)
class AvailableDocument:
    """One available document: its listing, where it is stored and the name its SourceRefs use."""

    info: DocumentInfo
    content_hash: str
    content_type: str
    extracted_text_hash: str | None
    chunking_version: str | None
    ref_name: str
    """The filename, or ``filename (folder legal)`` when two available documents share a filename."""
    locate: Callable[[], DocumentLocation] = field(repr=False, compare=False)
    """Builds the storage location on demand: validating the path of every listed document would dominate the
    cost of a 1,000-document listing, and only the few documents a tool reads need it."""

    @property
    def location(self) -> DocumentLocation:
        """Where the document's record, text and blob are."""
        return self.locate()


@dataclass(frozen=True, slots=True)
class Availability:
    """The documents available to a scope, session documents first, then by context (focus first)."""

    scope: DocumentScope
    focus_contexts: tuple[ContextRef, ...]
    historical_contexts: tuple[ContextRef, ...]
    documents: tuple[AvailableDocument, ...]
    _by_id: dict[str, AvailableDocument] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_id.update((doc.info.document_id, doc) for doc in self.documents)

    def find(self, document_id: str) -> AvailableDocument | None:
        """The available document with this id, or ``None`` (unknown, or not available in this scope)."""
        return self._by_id.get(document_id)


def session_document(principal: Principal, session_id: str, record: ContextFile) -> AvailableDocument:
    """A session file as an available document."""
    info = _info(record, record.file_id, "session", session_id, "session")
    return _available(record, info, partial(session_location, principal, session_id, record))


def context_document(organization: str, record: ContextDocument, origin: Origin | None) -> AvailableDocument:
    """A context document as an available document (``origin`` None outside a scope, e.g. a context's listing)."""
    info = _info(record, record.document_id, record.context_type, record.context_id, origin)
    return _available(record, info, partial(context_location, organization, record))


def _available(
    record: ContextDocument | ContextFile, info: DocumentInfo, locate: Callable[[], DocumentLocation]
) -> AvailableDocument:
    return AvailableDocument(
        info=info,
        content_hash=record.content_hash,
        content_type=record.content_type,
        extracted_text_hash=record.extracted_text_hash,
        chunking_version=record.chunking_version,
        ref_name=record.filename,
        locate=locate,
    )


def stored_context_document(organization: str, body: dict[str, Any], origin: Origin | None) -> AvailableDocument:
    """:func:`context_document` straight from a stored record: one validation (the listing's) per document."""
    info = DocumentInfo.model_validate({**body, "origin": origin, "has_summary": body.get("digest_status") == "ready"})
    return AvailableDocument(
        info=info,
        content_hash=body["content_hash"],
        content_type=body["content_type"],
        extracted_text_hash=body.get("extracted_text_hash"),
        chunking_version=body.get("chunking_version"),
        ref_name=info.filename,
        locate=partial(_locate_stored, organization, body),
    )


def _locate_stored(organization: str, body: dict[str, Any]) -> DocumentLocation:
    return context_location(organization, ContextDocument.model_validate(body))


def _info(
    record: ContextDocument | ContextFile,
    document_id: str,
    context_type: DocumentContextType,
    context_id: str,
    origin: Origin | None,
) -> DocumentInfo:
    return DocumentInfo(
        document_id=document_id,
        filename=record.filename,
        context_type=context_type,
        context_id=context_id,
        status=record.status,
        status_reason=record.status_reason,
        has_summary=record.digest_status == "ready",
        digest_status=record.digest_status,
        digest_error_code=record.digest_error_code,
        size_bytes=record.size_bytes,
        token_estimate=record.token_estimate,
        media_type=record.media_type,
        page_count=record.page_count,
        span_count=record.span_count,
        extractors=record.extractors,
        origin=origin,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


async def available_documents(
    principal: Principal,
    scope: DocumentScope,
    *,
    directory: ContextDirectory,
    context_documents: ContextDocumentReader,
    session_files: SessionDocuments,
) -> Availability:
    """THE availability function: the documents ``scope`` makes available to ``principal``."""
    documents: list[AvailableDocument] = []
    if scope.session_id is not None:
        documents.extend(
            session_document(principal, scope.session_id, record)
            for record in await session_files.files(principal, scope.session_id)
        )
    focus_contexts: list[ContextRef] = []
    historical: list[ContextRef] = []
    if scope.focus is not None or (scope.include_historical and scope.historical):
        tree = await directory.tree(principal.organization)
        if scope.focus is not None:
            focus_contexts = derive_contexts(tree, scope.focus)
        if scope.include_historical:
            for previous in scope.historical:
                historical.extend(
                    ref
                    for ref in derive_contexts(tree, previous)
                    if ref not in focus_contexts and ref not in historical
                )
    order = {(ref.type, ref.id): position for position, ref in enumerate([*focus_contexts, *historical])}
    focus_set = {(ref.type, ref.id) for ref in focus_contexts}
    if order:
        bodies = await context_documents.in_contexts(principal.organization, [*focus_contexts, *historical])
        bodies.sort(key=lambda b: (order[(b["context_type"], b["context_id"])], b["created_at"], b["document_id"]))
        for body in bodies:
            where = (body["context_type"], body["context_id"])
            origin: Origin = "focus" if where in focus_set else "historical"
            documents.append(stored_context_document(principal.organization, body, origin))
    return Availability(
        scope=scope,
        focus_contexts=tuple(focus_contexts),
        historical_contexts=tuple(historical),
        documents=tuple(_disambiguated(_without_copies(documents))),
    )


def _without_copies(documents: list[AvailableDocument]) -> list[AvailableDocument]:
    """The list without a context document whose bytes an earlier document already has: a policy filed in a folder
    and again in one of its usecases is one document to search and to quote (the first, in availability order,
    stays). Session files are always kept: the user attached each of them by name."""
    seen: set[str] = set()
    result = []
    for doc in documents:
        copy = doc.info.context_type != "session" and bool(doc.content_hash) and doc.content_hash in seen
        if doc.content_hash:
            seen.add(doc.content_hash)
        if not copy:
            result.append(doc)
    return result


def _disambiguated(documents: list[AvailableDocument]) -> list[AvailableDocument]:
    """Give documents that share a filename distinct SourceRef names: ``report.pdf (folder legal)``."""
    counts = Counter(doc.info.filename for doc in documents)
    result = []
    for doc in documents:
        if counts[doc.info.filename] > 1:
            info = doc.info
            where = "session" if info.context_type == "session" else f"{info.context_type} {info.context_id}"
            doc = replace(doc, ref_name=f"{info.filename} ({where})")
        result.append(doc)
    return result
