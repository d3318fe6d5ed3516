"""A processed document as a search engine indexes it: its spans with their locators, tokens and vectors."""

from __future__ import annotations

from collections.abc import Sequence

from orc.search.port import IndexedDocument, IndexedSpan, ScopeFields, index_version
from orc.search.text_store import DocumentText
from orc.text import split_sentences, tokenize


def indexed_spans(text: DocumentText) -> list[IndexedSpan]:
    """Every span of ``text``, tokenized (CPU-bound: run it in a thread for big documents)."""
    spans = []
    for ordinal, span in enumerate(text.spans):
        start, end = text.span_offsets(ordinal)
        sentences = tuple(tuple(terms) for sentence in split_sentences(span.text) if (terms := tokenize(sentence)))
        spans.append(
            IndexedSpan(
                ordinal=ordinal,
                span_id=span.span_id,
                page=span.page,
                start=start,
                end=end,
                text=span.text,
                section=span.section,
                # The sentences hold every word of the span: the text's tokens are theirs, in order.
                terms=tuple(term for sentence in sentences for term in sentence),
                title_terms=tuple(tokenize(span.section)) if span.section else (),
                sentences=sentences,
            )
        )
    return spans


def indexed_document(
    text: DocumentText,
    *,
    document_id: str,
    scope: ScopeFields,
    vectors: Sequence[Sequence[float]] | None = None,
    vector_model: str | None = None,
) -> IndexedDocument:
    """``text`` as the entry of ``document_id`` (CPU-bound, as :func:`indexed_spans`)."""
    return IndexedDocument(
        organization=scope.organization,
        document_id=document_id,
        version=index_version(text.extracted_text_hash, text.chunking_version),
        scope=scope,
        spans=indexed_spans(text),
        vectors=vectors if vectors is not None and len(vectors) == len(text.spans) else None,
        vector_model=vector_model if vectors is not None and len(vectors) == len(text.spans) else None,
    )
