"""What the embedded engine keeps on disk: the folder layout, the SQLite file's migrations, the lexical index's
schema, and how a span is stored in the index and read back (one place, so the two directions cannot drift)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orc.search.port import IndexedDocument, IndexedSpan, SpanHit

LAYOUT = "1"
"""The on-disk layout; part of the folder name, so a change of it starts a new index (rebuilt from the stored
text by the retriever as documents are searched) instead of misreading an old one."""
MIGRATIONS = (
    """
    CREATE TABLE documents (
        organization TEXT NOT NULL,
        document_id TEXT NOT NULL,
        version TEXT NOT NULL,
        owner TEXT NOT NULL,
        spans INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        vector_model TEXT,
        PRIMARY KEY (organization, document_id)
    ) WITHOUT ROWID;
    CREATE INDEX documents_by_owner ON documents (organization, owner);
    CREATE TABLE vectors (
        organization TEXT NOT NULL,
        document_id TEXT NOT NULL,
        version TEXT NOT NULL,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (organization, document_id)
    ) WITHOUT ROWID;
    """,
    # Vector sets get an entry number that is never reused (the key of their rows in the ANN segments) and say
    # which segment holds them. The old table's rows are dropped and their documents marked as without vectors:
    # the retriever gives them their stored vectors again in the background.
    """
    DROP TABLE vectors;
    UPDATE documents SET vector_model = NULL;
    CREATE TABLE vector_sets (
        entry INTEGER PRIMARY KEY AUTOINCREMENT,
        organization TEXT NOT NULL,
        document_id TEXT NOT NULL,
        version TEXT NOT NULL,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL,
        spans INTEGER NOT NULL,
        segment INTEGER,
        data BLOB NOT NULL,
        UNIQUE (organization, document_id)
    );
    CREATE INDEX vector_sets_by_segment ON vector_sets (organization, segment);
    CREATE TABLE vector_segments (
        segment INTEGER PRIMARY KEY AUTOINCREMENT,
        organization TEXT NOT NULL,
        model TEXT NOT NULL,
        dims INTEGER NOT NULL,
        spans INTEGER NOT NULL,
        file TEXT NOT NULL
    );
    """,
)
"""The SQLite file's schema, one script per version (``PRAGMA user_version`` says how many ran)."""


def layout_root(root: Path) -> Path:
    """Where the engine under ``root`` keeps this layout's files."""
    return root / f"v{LAYOUT}"


def organization_folder(root: Path, kind: str, organization: str) -> Path:
    """An organization's folder of ``kind`` (``lexical``, ``vectors``) under the layout's root."""
    return root / kind / hashlib.sha256(organization.encode()).hexdigest()[:32]


def lexical_schema() -> Any:
    """The tantivy schema of a span."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    # Raw: ids and owners are matched whole (deletes and filters), never tokenized.
    builder.add_text_field("document", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("owner", tokenizer_name="raw", index_option="basic")
    # orc's tokens, joined by spaces: term frequencies for BM25, no positions (no phrase queries are made).
    builder.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
    builder.add_text_field("title", tokenizer_name="whitespace", index_option="freq")
    builder.add_unsigned_field("ordinal", stored=True, indexed=True, fast=True)
    builder.add_bytes_field("payload", stored=True)
    return builder.build()


def tantivy_document(tantivy: Any, document: IndexedDocument, owner: str, span: IndexedSpan) -> Any:
    """``span`` of ``document`` as the index stores it."""
    payload = {
        "v": document.version,
        "i": span.span_id,
        "p": span.page,
        "s": span.start,
        "e": span.end,
        "c": span.section,
        "t": span.text,
        "z": [" ".join(sentence) for sentence in span.sentences],
        "h": " ".join(span.title_terms),
    }
    stored = tantivy.Document()
    stored.add_text("document", document.document_id)
    stored.add_text("owner", owner)
    stored.add_text("body", " ".join(span.terms))
    stored.add_text("title", " ".join(span.title_terms))
    stored.add_unsigned("ordinal", span.ordinal)
    stored.add_bytes("payload", json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())
    return stored


def stored_hit(stored: Any, score: float) -> SpanHit:
    """A span read back from the index's stored fields, as a hit of ``score``."""
    payload = json.loads(bytes(stored.get_first("payload")))
    span = IndexedSpan(
        ordinal=int(stored.get_first("ordinal")),
        span_id=payload["i"],
        page=payload["p"],
        start=payload["s"],
        end=payload["e"],
        text=payload["t"],
        section=payload["c"],
        terms=(),
        title_terms=tuple(payload.get("h", "").split()),
        sentences=tuple(tuple(sentence.split()) for sentence in payload.get("z", ())),
    )
    return SpanHit(str(stored.get_first("document")), payload["v"], span, score)


def ordinals_query(tantivy: Any, schema: Any, ordinals: Sequence[int]) -> Any:
    """Spans by ordinal through the ordinal's postings: a term set query on the numeric field reads the field's
    column for every span of the organization instead (tens of milliseconds at a million spans)."""
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "ordinal", ordinal)) for ordinal in ordinals]
    )


def term_query(tantivy: Any, schema: Any, field: str, term: str) -> Any:
    """One token on one field, scored with its frequency."""
    return tantivy.Query.term_query(schema, field, term, index_option="freq")
