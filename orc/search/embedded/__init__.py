"""The embedded search engine: one index per organization on the local disk, shared by every process on the
machine and updated in place.

Why it looks like this (measurements in ``docs/search.md`` and ``bench/README.md``):

- **Lexical: tantivy** (a Rust BM25 engine with Lucene's index layout, from PyPI). Over a million spans it
  answers a top-30 disjunction in a few milliseconds, because it skips blocks of postings that cannot reach the
  top (block-max WAND) where SQLite's FTS5 scores every matching row. Spans are indexed as orc's own tokens
  (:func:`orc.text.tokenize`, joined by spaces and split again by tantivy's whitespace tokenizer), so ranking sees
  the same terms whatever engine holds them. Each organization has its own index directory: one organization's
  queries never read another's postings, and its BM25 statistics are its own.
- **Everything else: one SQLite file** (stdlib ``sqlite3``, WAL): which version of which document is indexed,
  token totals for the corpus statistics, and the span vectors. SQLite's locking makes it safe to share between
  processes as it is.
- **Shared, never rebuilt per process.** Every process opens the same directories. A write takes an exclusive
  file lock on the organization's index (``flock``), so ``orc serve --workers 2`` and ``orc worker`` take turns;
  writes queued meanwhile in one process go in the same commit (a commit costs a sync to disk, not per span). A
  search first looks at the index's ``meta.json`` (one ``stat``) and reloads when another process committed, so
  the next search after a replace sees it in every process.
- **Vectors** are one float32 matrix per document in the SQLite file (the engine's truth for them). A query whose
  scope holds few spans (a session's, a team's) is answered exactly: one matrix product per document, with a
  per-process cache bounded in bytes. Past that, an exact scan reads every vector of the organization (1.5 GB at
  a million spans of 384 dimensions), so the organization's vectors are also folded, in the background, into
  immutable HNSW segments beside the lexical index (:mod:`orc.search.embedded.segments`), memory-mapped by every
  process; only the vectors of documents indexed since the last fold are scanned exactly. A hit whose vector set
  is no longer current (replaced, deleted) is dropped, so the next search after a replace finds the new vectors
  and never the old, in every process, whether or not they were folded yet.
"""

from __future__ import annotations

from orc.search.embedded.engine import EmbeddedSearchEngine

__all__ = ["EmbeddedSearchEngine"]
