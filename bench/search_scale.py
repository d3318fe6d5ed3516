"""Targets (issue 38, the embedded search engine on this machine): one organization of 1,000,000 spans (5,000
documents) — search p50 ≤ 50 ms and p95 ≤ 150 ms; the first search in a new process ≤ 1 s; a serving process's
memory grows ≤ 200 MB with the organization's size; indexing ≥ 2,000 spans/s; a replaced document is what the next
search finds, in every process.

Set-up: ``--documents`` × ``--spans-per-document`` made-up documents (paragraphs of about 110 words drawn with a
Zipf distribution from the English stems of orc's related-terms table, one span per paragraph), cut into spans by
orc's chunker, and indexed through the retriever (orc's tokenizer, then the embedded engine's group commits) by
``--writers`` concurrent jobs, as document processing does. The index is kept in ``--root`` (a temporary folder by
default; give one to measure searches again without indexing: ``--reuse``).

Timed:

- **search**: ``--queries`` queries of 3-5 content words of a random span (with function words around them; the
  corpus's 150 most frequent words stand for English's function words and are left out), each a
  whole retrieval of the organization's 5,000 documents as ``documents.search`` asks for it (freshness check,
  expansion, BM25, feedback, sentence re-rank); the engine's BM25 query alone is a row of its own;
- **first search in a new process**: a new Python process opens the engine and searches once (its imports timed
  apart), and reports its memory (``VmRSS``, and what of it is file pages) before opening the engine and after
  ``--queries`` searches (with ``--vectors``, its first vector search is timed too, and the 100 vector queries
  are searched before the memory is read);
- **replace**: that other process replaces a document with a new version holding a word no other span has; this
  process's next search must find the new word and not the old.

With ``--vectors`` (dimensions), spans get random unit vectors (the worst case for a graph index: real embeddings
cluster), the engine folds them into its ANN segments (timed apart), and the vector leg is timed twice for 100
queries near a random span: from the segments, and by an exact scan of every vector — which also gives the
segments' recall@30; and once more after a lexical retrieval, as the retriever asks this engine with embeddings
on (the two legs one after the other).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import BenchResult, Check, percentile, summarize
from bench.documents_common import exit_with, standalone
from orc.extracted import ExtractedDocument
from orc.search.embedded import EmbeddedSearchEngine
from orc.search.indexing import indexed_document
from orc.search.port import ScopeFields, SearchFilter, SearchRequest, index_version, owner_key
from orc.search.retriever import Retriever, Target
from orc.search.text_store import DocumentText, process_extracted
from orc.text.related import _table

ORGANIZATION = "acme"
SCOPE = ScopeFields(organization=ORGANIZATION, owner=owner_key("organization", ORGANIZATION))
TARGET_P50_MS = 50.0
TARGET_P95_MS = 150.0
TARGET_FIRST_S = 1.0
TARGET_RSS_MB = 200.0
TARGET_INDEXING = 2000.0
FUNCTION_WORDS = ("what", "is", "the", "how", "do", "i", "of", "a", "for", "in", "does", "about")
MARKER_OLD, MARKER_NEW = "zqxoldversionword", "zqxnewversionword"
MODEL = "bench-vectors"
REPOSITORY = Path(__file__).resolve().parents[1]


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--spans-per-document", type=int, default=200)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--writers", type=int, default=4, help="concurrent indexing jobs (4)")
    parser.add_argument("--root", type=Path, help="keep the index here (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true", help="search the index already in --root")
    parser.add_argument("--vectors", type=int, default=0, help="span vector dimensions (0: lexical only)")
    parser.add_argument(
        "--exact-queries",
        type=int,
        default=100,
        help="of the 100 vector queries, how many are also answered by an exact scan (the recall's reference; "
        "a scan reads every vector, seconds a query at a few hundred thousand spans)",
    )


def _words() -> list[str]:
    """English stems, most frequent-looking first (shorter words first stand in for frequency)."""
    words = [word for word in _table() if word.isalpha() and 3 <= len(word) <= 12]
    random.Random(3).shuffle(words)
    return words[:40_000]


class Corpus:
    """Made-up documents of Zipf-distributed words; document ``n`` is the same on every run."""

    def __init__(self, spans_per_document: int) -> None:
        self.words = np.array(_words())
        ranks = np.arange(1, len(self.words) + 1, dtype=np.float64)
        weights = 1.0 / ranks**1.05
        self.p = weights / weights.sum()
        self.spans = spans_per_document

    def text(self, number: int, marker: str | None = None) -> DocumentText:
        rng = np.random.default_rng(number)
        lengths = rng.integers(90, 130, size=self.spans)
        drawn = self.words[rng.choice(len(self.words), size=int(lengths.sum()), p=self.p)]
        paragraphs, cursor = [], 0
        for length in lengths:
            words = list(drawn[cursor : cursor + length])
            cursor += length
            sentences = [" ".join(words[i : i + 15]).capitalize() + "." for i in range(0, len(words), 15)]
            paragraphs.append(" ".join(sentences))
        if marker:
            paragraphs[0] = f"{paragraphs[0]} {marker.capitalize()}."
        return process_extracted(ExtractedDocument(pages=["\n\n".join(paragraphs)], media_type="text/plain"))


def _target(number: int, text: DocumentText) -> Target:
    return Target(
        document_id=f"doc{number:05d}",
        name=f"doc{number:05d}.txt",
        version=index_version(text.extracted_text_hash, text.chunking_version),
        scope=SCOPE,
    )


def _vectors(text: DocumentText, dimensions: int) -> np.ndarray:
    rng = np.random.default_rng(len(text.spans) * 7919 + hash(text.extracted_text_hash) % 1000)
    matrix = rng.standard_normal((len(text.spans), dimensions)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


async def _index(args: argparse.Namespace, root: Path, corpus: Corpus) -> dict[str, float]:
    """Index every document with ``--writers`` concurrent jobs; spans per second of indexing (tokenizing and
    committing), the chunking apart."""
    engine = EmbeddedSearchEngine(root)
    retriever = Retriever(engine)
    pending = iter(range(args.documents))
    spans = 0
    chunking = 0.0
    indexing = 0.0
    chunking_cpu = 0.0

    def chunk(number: int) -> tuple[DocumentText, np.ndarray | None]:
        """The made-up document and its vectors: the bench's own data, timed apart from indexing."""
        nonlocal chunking_cpu
        began = time.thread_time()
        text = corpus.text(number, MARKER_OLD if number == 0 else None)
        matrix = _vectors(text, args.vectors) if args.vectors else None
        chunking_cpu += time.thread_time() - began
        return text, matrix

    async def writer() -> None:
        nonlocal spans, chunking, indexing
        for number in pending:
            began = time.perf_counter()
            text, matrix = await asyncio.to_thread(chunk, number)
            chunked = time.perf_counter()
            if matrix is None:
                await retriever.index(text, document_id=f"doc{number:05d}", scope=SCOPE)
            else:  # as the retriever indexes a document with vectors: tokenized in a worker thread
                entry = await asyncio.to_thread(
                    indexed_document,
                    text,
                    document_id=f"doc{number:05d}",
                    scope=SCOPE,
                    vectors=matrix.tolist(),
                    vector_model=MODEL,
                )
                await engine.upsert(entry)
            chunking += chunked - began
            indexing += time.perf_counter() - chunked
            spans += len(text.spans)
            if number % 250 == 249:
                print(f"indexed {number + 1} documents, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)

    load_before = os.getloadavg()
    started, cpu_started = time.perf_counter(), time.process_time()
    await asyncio.gather(*(writer() for _ in range(args.writers)))
    # Every write is committed here; closing waits for the fold under way (with vectors), which is not writing.
    committed = time.perf_counter() - started
    await engine.aclose()
    wall = time.perf_counter() - started
    folding: dict[str, float] = {}
    if args.vectors:
        folded, folded_cpu = time.perf_counter(), time.process_time()
        engine = EmbeddedSearchEngine(root)
        await engine.compact(ORGANIZATION)
        await engine.aclose()
        fold_wall = time.perf_counter() - folded
        folding = {
            "fold_wall_seconds": round(fold_wall, 1),
            "fold_cpu_seconds": round(time.process_time() - folded_cpu, 1),
            # Until every vector is in a segment: what a bulk load that searches right after waits for.
            "spans_per_second_until_folded": round(spans / (wall + fold_wall), 0),
        }
    # Every thread of the process (tokenizing, tantivy's indexing thread, SQLite), the made-up chunking apart: what
    # indexing costs whatever else the machine runs.
    cpu = time.process_time() - cpu_started - chunking_cpu
    return {
        "spans": spans,
        "wall_seconds": round(committed, 1),
        "cpu_seconds": round(cpu, 1),
        "spans_per_cpu_second": round(spans / max(cpu, 1e-9), 0),
        # The writers overlap: spans over the wall time until the last commit, less the share of it the made-up
        # chunking took.
        "spans_per_second": round(spans / max(committed * indexing / max(indexing + chunking, 1e-9), 1e-9), 0),
        "spans_per_second_with_chunking": round(spans / committed, 0),
        **folding,
        "load_before_after": [round(load_before[0], 1), round(os.getloadavg()[0], 1)],
    }


STOP_RANKS = 150
"""The corpus's most frequent words play the part of English's function words: a user's query leaves them out (the
tokenizer drops real ones), so queries are drawn from the rest, as real content words are."""


def _queries(corpus: Corpus, documents: int, count: int) -> list[str]:
    rng = random.Random(17)
    common = {str(word) for word in corpus.words[:STOP_RANKS]}
    queries = []
    for _ in range(count):
        text = corpus.text(rng.randrange(documents))
        span = text.spans[rng.randrange(len(text.spans))].text
        words = [word for word in span.replace(".", " ").lower().split() if word not in common]
        chosen = rng.sample(words, rng.randint(3, 5))
        queries.append(" ".join([rng.choice(FUNCTION_WORDS), *chosen, rng.choice(FUNCTION_WORDS)]))
    return queries


def _targets(root: Path) -> list[Target]:
    """The 5,000 targets a search of the organization passes (versions read back from the engine's entries)."""
    import sqlite3

    with sqlite3.connect(root / "v1" / "documents.sqlite3") as db:
        rows = db.execute("SELECT document_id, version FROM documents WHERE organization = ?", (ORGANIZATION,))
        versions = dict(rows.fetchall())
    return [
        Target(document_id=document_id, name=f"{document_id}.txt", version=version, scope=SCOPE)
        for document_id, version in sorted(versions.items())
    ]


async def _search(
    args: argparse.Namespace, root: Path, queries: Sequence[str], targets: Sequence[Target]
) -> dict[str, Any]:
    engine = EmbeddedSearchEngine(root)
    retriever = Retriever(engine)
    await retriever.retrieve(queries[0], ORGANIZATION, targets, limit=10)  # opens the index
    whole, bm25, found = [], [], 0
    for query in queries:
        began = time.perf_counter()
        hits = await retriever.retrieve(query, ORGANIZATION, targets, limit=10)
        whole.append((time.perf_counter() - began) * 1000)
        found += bool(hits.spans)
        terms = {word: 1.0 for word in query.split() if word not in FUNCTION_WORDS}
        began = time.perf_counter()
        where = SearchFilter(ORGANIZATION, owners=frozenset({SCOPE.owner}))
        await engine.search(SearchRequest(where, 24, terms=terms))
        bm25.append((time.perf_counter() - began) * 1000)
    vector: dict[str, list[float]] = {"segments": [], "exact": []}
    vector_queries: list[tuple[tuple[str, int], list[float]]] = []
    with_embeddings: list[float] = []
    agreed = 0
    sources = {"segments": 0, "exact": 0}
    if args.vectors:
        exact = EmbeddedSearchEngine(root, exact_spans=1 << 62)
        for number, (source, unit) in enumerate(vector_queries := _vector_queries(root, 100)):
            found_by: dict[str, set[tuple[str, int]]] = {}
            engines = (("segments", engine), ("exact", exact))
            for name, searched in engines[: 2 if number < args.exact_queries else 1]:
                request = _vector_request(unit)
                began = time.perf_counter()
                hits = await searched.search(request)
                vector[name].append((time.perf_counter() - began) * 1000)
                found_by[name] = {(hit.document_id, hit.span.ordinal) for hit in hits}
                sources[name] += source in {(hit.document_id, hit.span.ordinal) for hit in hits[:10]}
            if "exact" in found_by:
                agreed += len(found_by["segments"] & found_by["exact"])
            # What a retrieval with embeddings asks of this engine (no native hybrid): the retriever's lexical
            # ranking, then the vector leg, one after the other (the query's embedding request apart).
            began = time.perf_counter()
            await retriever.retrieve(queries[number % len(queries)], ORGANIZATION, targets, limit=10)
            await engine.search(_vector_request(unit))
            with_embeddings.append((time.perf_counter() - began) * 1000)
        await exact.aclose()
    await engine.aclose()
    recall = agreed / (30 * len(vector["exact"])) if vector["exact"] else None
    return {
        "retrieve": whole,
        "bm25": bm25,
        "vector": vector,
        "with_embeddings": with_embeddings,
        "recall_at_30": recall,
        "source_in_top_10": {name: count / len(vector[name]) for name, count in sources.items() if vector[name]},
        "found": found,
        "vector_queries": [unit for _, unit in vector_queries],
    }


def _vector_queries(root: Path, count: int) -> list[tuple[tuple[str, int], list[float]]]:
    """Unit vectors near random spans' vectors (each a stored row plus noise of the same size, so its nearest
    span is still that one), as a question is near the passage that answers it; each with the span it was made
    from."""
    import sqlite3

    rng = np.random.default_rng(5)
    with sqlite3.connect(root / "v1" / "documents.sqlite3") as db:
        rows = db.execute(
            "SELECT document_id, dims, data FROM vector_sets ORDER BY random() LIMIT ?", (count,)
        ).fetchall()
    queries = []
    for document_id, dims, data in (rows[int(index)] for index in rng.integers(len(rows), size=count)):
        matrix = np.frombuffer(data, dtype="<f4").reshape(-1, dims)
        ordinal = int(rng.integers(len(matrix)))
        near = matrix[ordinal] + rng.standard_normal(dims).astype(np.float32) / np.sqrt(dims)
        queries.append(((str(document_id), ordinal), (near / np.linalg.norm(near)).tolist()))
    return queries


def _vector_request(unit: list[float]) -> SearchRequest:
    return SearchRequest(SearchFilter(ORGANIZATION), 30, vector=unit, vector_model=MODEL, mode="vector")


def _memory() -> dict[str, float]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


async def _probe(
    root: Path, queries: Sequence[str], documents: int, spans: int, vector_queries: Sequence[list[float]]
) -> dict[str, Any]:
    """What a new process does: open, search once, search more, then replace document 0 (the parent checks)."""
    corpus = Corpus(spans)  # the bench's made-up text (for the replace below), not part of a first search
    import tantivy  # noqa: F401  - the engine's library is a fixed cost, not growth with the organization's size

    before = _memory()
    began, cpu_began = time.perf_counter(), time.process_time()
    engine = EmbeddedSearchEngine(root)
    retriever = Retriever(engine)
    targets = _targets(root)
    await retriever.retrieve(queries[0], ORGANIZATION, targets, limit=10)
    first = time.perf_counter() - began
    first_cpu = time.process_time() - cpu_began
    first_vector = None
    if vector_queries:  # the segments mapped and searched for the first time
        began = time.perf_counter()
        await engine.search(_vector_request(vector_queries[0]))
        first_vector = time.perf_counter() - began
    for query in queries:
        await retriever.retrieve(query, ORGANIZATION, targets, limit=10)
    for unit in vector_queries:
        await engine.search(_vector_request(unit))
    after = _memory()
    began = time.perf_counter()
    await retriever.index(corpus.text(0, MARKER_NEW), document_id="doc00000", scope=SCOPE)
    replace_ms = (time.perf_counter() - began) * 1000
    await engine.aclose()
    return {
        "first_search_s": first,
        "first_search_cpu_s": first_cpu,
        "first_vector_search_s": first_vector,
        "before": before,
        "after": after,
        "replace_ms": replace_ms,
    }


def _probe_main(argv: Sequence[str], began: float) -> None:
    imported = time.perf_counter() - began
    root, documents, spans = Path(argv[0]), int(argv[1]), int(argv[2])
    queries, vector_queries = json.loads(Path(argv[3]).read_text())
    report = asyncio.run(_probe(root, queries, documents, spans, vector_queries))
    print(json.dumps({"imports_s": imported, **report}))


async def run(args: argparse.Namespace) -> BenchResult:
    """Index (unless reused), search, then a new process searches and replaces a document."""
    result = BenchResult(name="search_scale")
    with tempfile.TemporaryDirectory(prefix="orc-bench-search-") as scratch:
        root = args.root or Path(scratch) / "search"
        corpus = Corpus(args.spans_per_document)
        indexing: dict[str, Any] = {}
        if not args.reuse:
            indexing = await _index(args, root, corpus)
        queries = _queries(corpus, args.documents, args.queries)
        targets = _targets(root)
        spans = indexing.get("spans") or len(targets) * args.spans_per_document
        timed = await _search(args, root, queries, targets)
        # Before the other process replaces document 0, this process has found its old version.
        engine = EmbeddedSearchEngine(root)
        retriever = Retriever(engine)
        old = await retriever.retrieve(MARKER_OLD, ORGANIZATION, targets, limit=3)
        query_file = Path(scratch) / "queries.json"
        query_file.write_text(json.dumps([queries[:100], timed["vector_queries"]]))
        spawned = time.perf_counter()
        probe_arguments = [str(root), str(args.documents), str(args.spans_per_document), str(query_file)]
        code = (
            "import time; began = time.perf_counter(); "
            f"from bench.search_scale import _probe_main; _probe_main({probe_arguments!r}, began)"
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, cwd=REPOSITORY, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await process.communicate()
        if process.returncode:
            raise RuntimeError(f"the probe process failed: {err.decode()[-2000:]}")
        probe_wall = time.perf_counter() - spawned
        probe = json.loads(out.decode().strip().splitlines()[-1])
        new_text = await asyncio.to_thread(corpus.text, 0, MARKER_NEW)
        targets[0] = _target(0, new_text)
        new = await retriever.retrieve(MARKER_NEW, ORGANIZATION, targets, limit=3)
        stale = await retriever.retrieve(MARKER_OLD, ORGANIZATION, targets, limit=3)
        await engine.aclose()
    retrieve = {**summarize(timed["retrieve"]), "p95": round(percentile(timed["retrieve"], 95), 3)}
    bm25 = {**summarize(timed["bm25"]), "p95": round(percentile(timed["bm25"], 95), 3)}
    growth = probe["after"]["VmRSS"] - probe["before"]["VmRSS"]
    anon = probe["after"].get("RssAnon", 0.0) - probe["before"].get("RssAnon", 0.0)
    result.rows = [
        {"measure": "retrieve (documents.search's ranking)", "spans": spans, **retrieve},
        {"measure": "engine BM25 query alone (top 24)", "spans": spans, **bm25},
    ]
    for name, label in (("segments", "from the ANN segments"), ("exact", "by an exact scan")):
        if timed["vector"][name]:
            times = timed["vector"][name]
            row = {**summarize(times), "p95": round(percentile(times, 95), 3)}
            result.rows.append({"measure": f"vector top 30, {label} ({args.vectors} dims)", "spans": spans, **row})
    if timed["with_embeddings"]:
        row = {**summarize(timed["with_embeddings"]), "p95": round(percentile(timed["with_embeddings"], 95), 3)}
        result.rows.append({"measure": "retrieve, then the vector leg (with embeddings)", "spans": spans, **row})
    replaced = bool(new.spans) and new.spans[0].target.document_id == "doc00000" and not stale.spans
    result.checks = [
        Check(f"search over {spans} spans, p50 (ms)", retrieve["p50"], TARGET_P50_MS),
        Check(f"search over {spans} spans, p95 (ms)", retrieve["p95"], TARGET_P95_MS),
        Check("first search in a new process", round(probe["first_search_s"], 3), TARGET_FIRST_S, unit="s"),
        Check("serving process memory growth", round(growth, 1), TARGET_RSS_MB, unit="MB"),
        Check("a replaced document is what another process finds next (1 = yes)", 0.0 if replaced else 1.0, 0.0, ""),
    ]
    if indexing:
        per_thousand = 1_000_000 / max(indexing["spans_per_second"], 1e-9)
        result.checks.append(
            Check(
                "indexing time per 1,000 spans (≥ 2,000 spans/s)", round(per_thousand, 1), 1_000_000 / TARGET_INDEXING
            )
        )
    result.details = {
        "indexing": indexing,
        "queries_with_results": timed["found"],
        "vector_recall_at_30": timed["recall_at_30"],
        "vector_source_in_top_10": timed["source_in_top_10"],
        "new_process": {
            "imports_s": round(probe["imports_s"], 3),
            "first_search_cpu_s": round(probe["first_search_cpu_s"], 3),
            "first_vector_search_s": probe["first_vector_search_s"] and round(probe["first_vector_search_s"], 3),
            "wall_s": round(probe_wall, 2),
            "rss_before_mb": probe["before"],
            "rss_after_mb": probe["after"],
            "anonymous_growth_mb": round(anon, 1),
            "replace_ms": round(probe["replace_ms"], 1),
        },
        "replace": {
            "old_found_before": bool(old.spans),
            "new_found_after": bool(new.spans),
            "old_found_after": bool(stale.spans),
        },
        "load": os.getloadavg(),
    }
    return result


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
