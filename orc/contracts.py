"""Pydantic models that cross module and process boundaries: tool results, citations, usage.

These are wire contracts (MCP structured content, HTTP JSON, stored history): field names are kept stable.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CacheOutcome = Literal["hit", "miss"]


class FileRef(BaseModel):
    """A handle to one processed session document in the document_chat cache (not the catalog's id)."""

    model_config = ConfigDict(frozen=True)

    file_id: str
    blob_name: str


SECTION_SEPARATOR = " › "
"""Between the titles of a span's section path (``Installation › Requirements``), outermost first."""


class SourceSpan(BaseModel):
    """A span of a document that a tool used as evidence; ``ref`` is the SourceRef ``<filename>::<span_id>``."""

    ref: str
    document: str
    document_id: str | None = None
    """The catalog id of the span's document (``doc-…``); none only for text supplied to a context request."""
    span_id: str
    page: int | None = None
    text: str
    section: str | None = None
    """Title path of the span's section (a heading is never the quote; it travels here)."""


class Citation(BaseModel):
    """A span an answer relies on, with the quoted text so a reader can check it."""

    ref: str
    document: str
    document_id: str | None = None
    """The catalog id of the cited document, as routes and tools name it (``GET …/documents/{document_id}/content``,
    ``documents.get_page``); none only for text supplied to a context request, which is no stored document."""
    span_id: str
    page: int | None = None
    quote: str
    section: str | None = None
    """Title path of the cited span's section, when it has one."""


class PlaceToLook(BaseModel):
    """A passage to read when the answer declined: among what was retrieved, the closest the documents came to the
    question. It claims nothing (a claim of support is a :class:`Citation`): it says where a person could read on."""

    ref: str = Field(description="The span's SourceRef, `<document>::<span_id>`.")
    document: str = Field(description="The document's file name.")
    document_id: str | None = Field(
        default=None, description="The catalog id of the document, as a citation's (none for supplied text)."
    )
    span_id: str
    page: int | None = Field(default=None, description="The span's page (paged formats such as PDF).")
    section: str | None = Field(default=None, description="Title path of the span's section, when it has one.")
    excerpt: str = Field(description="The span's sentence closest to the question, whole (cut with … when long).")


class Usage(BaseModel):
    """Model token usage, when the model reports it."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


RetrievalLeg = Literal["lexical", "vector"]


class RetrievalLegs(BaseModel):
    """Which retrieval legs ran for a search or a turn (``metadata.retrieval``)."""

    model_config = ConfigDict(frozen=True)

    legs: list[RetrievalLeg] = Field(
        description="The legs whose rankings were used: lexical, and vector with embeddings."
    )
    fusion: Literal["rrf", "engine"] | None = Field(
        default=None,
        description="How the two legs were fused: rrf, by orc's retriever (a lexical and a vector request); engine, "
        "by the search engine's own hybrid query (one request: Azure AI Search's RRF, then its semantic ranker when "
        "ORC_SEARCH_SEMANTIC is on).",
    )
    embeddings: str | None = Field(default=None, description="The embedding model of the vector leg.")
    lexical_only: list[str] = Field(
        default_factory=list,
        description="Documents searched by the lexical leg only: their vectors are still being made.",
    )
    vector_error: str | None = Field(
        default=None, description="Why the vector leg did not run although embeddings are configured."
    )


class DocumentChatMetadata(BaseModel):
    """What document_chat reports besides its answer."""

    cache: CacheOutcome
    model: str
    model_calls: int = 0
    usage: Usage = Field(default_factory=Usage)
    sources: list[SourceSpan] = Field(default_factory=list)
    places_to_look: list[PlaceToLook] = Field(
        default_factory=list,
        description="Only when the answer declines: up to three of the sources that came closest to the question, "
        "best first, as places to read. They claim nothing (unlike citations).",
    )
    retrieval_rounds: int = Field(
        default=1, description="2 when the question's words were not in the documents and it was retrieved again."
    )
    elapsed_ms: float = 0.0
    retrieval: RetrievalLegs | None = Field(default=None, description="Which retrieval legs ran.")


class DocumentChatResult(BaseModel):
    """The structured result of the ``document_chat`` tool (document-chat-workflow "MCP Contract")."""

    answer: str
    files: list[FileRef]
    metadata: DocumentChatMetadata


class ToolCallRecord(BaseModel):
    """A tool call made during a turn, as stored in history and reported to clients."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    status: Literal["ok", "error"] = "ok"
    duration_ms: float = 0.0
    error: str | None = None


class Grounding(BaseModel):
    """How grounded an answer is: its sentences with and without a citation, and the markers removed."""

    cited_sentences: int = 0
    uncited_sentences: int = 0
    removed_markers: int = Field(default=0, description="Citation markers naming no span retrieved in this turn.")
    corrective_retry: bool = Field(
        default=False, description="Whether the answer was asked for again because most of it was uncited."
    )

    @property
    def mostly_uncited(self) -> bool:
        """More sentences without a citation than with one."""
        return self.uncited_sentences > self.cited_sentences


class UnavailableDocument(BaseModel):
    """An attached document the answer could not use, and why."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    name: str
    status: Literal["uploading", "processing", "failed"]
    reason: str
