"""The embedded engine's lexical side: one tantivy index per organization (BM25 with block-max WAND), written under
an exclusive file lock and reloaded when any process committed; the spans' stored fields are read from it too."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from orc.search.embedded.directory import Directory, Operation, Upsert, operation_document_id
from orc.search.embedded.layout import (
    lexical_schema,
    ordinals_query,
    organization_folder,
    stored_hit,
    tantivy_document,
    term_query,
)
from orc.search.port import SearchFilter, SearchRequest, SpanHit

WRITER_HEAP_BYTES = 15_000_000
"""tantivy's indexing buffer: a batch bigger than this is flushed in more than one segment."""


class LexicalIndex:
    """One organization's tantivy index, reloaded when another process (or this one) committed."""

    def __init__(self, path: Path, schema: Any) -> None:
        import tantivy

        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.schema = schema
        self.index = tantivy.Index(schema, path=str(path), reuse=True)
        self._seen: tuple[int, int, int] | None = None
        self._lock = threading.Lock()
        self._searcher: Any = None

    def searcher(self) -> Any:
        """A searcher over the last commit of any process (one ``stat`` when nothing changed)."""
        try:
            info = os.stat(self.path / "meta.json")
            seen = (info.st_ino, info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            seen = None
        with self._lock:
            if self._searcher is None or seen != self._seen:
                self.index.reload()
                self._searcher = self.index.searcher()
                self._seen = seen
            return self._searcher

    def write(self, operations: Sequence[Operation]) -> None:
        """One commit for a batch, under the organization's write lock (across processes)."""
        # filelock is imported here, in the thread that writes: importing it probes the file system (it makes a
        # temporary folder), which must not happen on an event loop.
        import tantivy
        from filelock import FileLock

        with FileLock(self.path / ".orc-write.lock", fallback_to_soft=False):
            writer = self.index.writer(WRITER_HEAP_BYTES, 1)
            try:
                for operation in operations:
                    writer.delete_documents_by_term("document", operation_document_id(operation))
                    if isinstance(operation, Upsert):
                        owner = operation.document.scope.owner
                        for span in operation.document.spans:
                            writer.add_document(tantivy_document(tantivy, operation.document, owner, span))
                writer.commit()
            except BaseException:
                writer.rollback()
                raise
            finally:
                # Merges the commit started finish before the lock is let go, so segments do not pile up.
                writer.wait_merging_threads()

    def search(self, request: SearchRequest, directory: Directory) -> list[SpanHit]:
        """BM25 over the span text and (at ``title_weight``) section titles, inside the request's filter."""
        import tantivy

        terms = {term: weight for term, weight in request.terms.items() if weight > 0 and term}
        if not terms:
            return []
        schema = self.schema
        should = []
        for term, weight in terms.items():
            should.append(
                (tantivy.Occur.Should, tantivy.Query.boost_query(term_query(tantivy, schema, "body", term), weight))
            )
            if request.title_weight > 0:
                title = term_query(tantivy, schema, "title", term)
                should.append((tantivy.Occur.Should, tantivy.Query.boost_query(title, weight * request.title_weight)))
        matching = tantivy.Query.boolean_query(should)
        filters = self._filter_clauses(tantivy, request.filter, directory)
        if any(occur == tantivy.Occur.Must for occur, _ in filters):
            query = tantivy.Query.boolean_query([(tantivy.Occur.Must, matching), *filters])
        else:  # the terms alone, or beside exclusions: one disjunction tantivy can prune
            query = tantivy.Query.boolean_query([*should, *filters]) if filters else matching
        searcher = self.searcher()
        found = searcher.search(query, request.limit, count=False).hits
        hits = [stored_hit(searcher.doc(address), float(score)) for score, address in found]
        # tantivy breaks ties by its own document order; the port's order is (document id, ordinal).
        hits.sort(key=lambda hit: (-hit.score, hit.document_id, hit.span.ordinal))
        return hits

    def _filter_clauses(self, tantivy: Any, where: SearchFilter, directory: Directory) -> list[Any]:
        """The filter as clauses beside the terms. A filter that keeps every owner (or document) the organization
        has is no clause at all, and one that keeps most of them excludes the rest: a query whose terms stand alone
        (or with exclusions) lets tantivy skip blocks of postings that cannot reach the top (block-max WAND),
        while a required filter makes it score every span that matches a term. The retriever drops hits outside
        its targets anyway, so a documents table a moment behind the index never widens what it returns."""
        clauses = []
        schema = self.schema
        for field, wanted, present in (
            ("owner", where.owners, directory.owners),
            ("document", where.documents, directory.rows.keys()),
        ):
            if wanted is None:
                continue
            excluded = present - wanted
            kept = present & wanted
            if not excluded and kept == wanted:
                continue  # everything the organization has: no clause
            if excluded and len(excluded) <= len(kept) and kept == wanted:
                clauses.append((tantivy.Occur.MustNot, tantivy.Query.term_set_query(schema, field, sorted(excluded))))
            else:
                chosen = tantivy.Query.term_set_query(schema, field, sorted(wanted))
                clauses.append((tantivy.Occur.Must, tantivy.Query.const_score_query(chosen, 0.0)))
        return clauses

    def spans(self, document_id: str, ordinals: Sequence[int]) -> list[SpanHit]:
        """The spans of ``document_id`` at ``ordinals``, in ordinal order, from the stored fields."""
        import tantivy

        schema = self.schema
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, tantivy.Query.term_query(schema, "document", document_id)),
                (tantivy.Occur.Must, ordinals_query(tantivy, schema, ordinals)),
            ]
        )
        searcher = self.searcher()
        found = searcher.search(query, len(ordinals), count=False).hits
        hits = [stored_hit(searcher.doc(address), 0.0) for _, address in found]
        hits.sort(key=lambda hit: hit.span.ordinal)
        return hits

    def spans_of_many(self, wanted: dict[str, list[int]]) -> list[SpanHit]:
        """The spans at ``wanted``'s ordinals of each of its documents, in one search of the index."""
        if not wanted:
            return []
        import tantivy

        schema = self.schema
        clauses = [
            (
                tantivy.Occur.Should,
                tantivy.Query.boolean_query(
                    [
                        (tantivy.Occur.Must, tantivy.Query.term_query(schema, "document", document_id)),
                        (tantivy.Occur.Must, ordinals_query(tantivy, schema, sorted(set(ordinals)))),
                    ]
                ),
            )
            for document_id, ordinals in wanted.items()
        ]
        searcher = self.searcher()
        count = sum(len(set(ordinals)) for ordinals in wanted.values())
        found = searcher.search(tantivy.Query.boolean_query(clauses), count, count=False).hits
        return [stored_hit(searcher.doc(address), 0.0) for _, address in found]

    def frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """In how many spans each of ``terms`` occurs (absent: none), from the term dictionary."""
        searcher = self.searcher()
        frequencies: dict[str, int] = {}
        for term in dict.fromkeys(terms):
            count = int(searcher.doc_freq("body", term)) if term else 0
            if count:
                frequencies[term] = count
        return frequencies

    def vocabulary(self, prefix: str, limit: int) -> list[str]:
        """Terms of the span text starting with ``prefix``, in term order."""
        found = self.searcher().terms_with_prefix("body", prefix)
        return sorted(term for term, count in found if count > 0)[:limit]


class LexicalIndexes:
    """Every organization's index under the layout's root, opened on first use."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._schema: Any = None
        self._indexes: dict[str, LexicalIndex] = {}
        self._lock = threading.Lock()

    def of(self, organization: str) -> LexicalIndex:
        """``organization``'s index."""
        with self._lock:
            found = self._indexes.get(organization)
            if found is None:
                if self._schema is None:
                    self._schema = lexical_schema()
                folder = organization_folder(self._root, "lexical", organization)
                found = self._indexes[organization] = LexicalIndex(folder, self._schema)
            return found

    def clear(self) -> None:
        """Let go of every index (opened again on next use)."""
        with self._lock:
            self._indexes.clear()
