"""Ranking: orc's tokenizer and BM25 (``orc.text``) against the ``bm25s`` package, on a generated corpus.

Not a target, a comparison that chose the implementation (see bench/README.md, "Ranking"). The corpus is the one
of ``bench/documents_search.py``: ``--documents`` documents of ``--spans-per-document`` paragraphs of about 750
characters, words drawn Zipf-like from a made-up 3,000-word vocabulary, here with English endings (-s, -ing,
-ation, …) so that stemming has work to do. Timed, each on the same tokens:

- tokenizing every span with :func:`orc.text.tokenize` (PyStemmer, a stemmer per thread, one stem cache), with
  the cache empty and then warm; and stemming the corpus's distinct words with PyStemmer and, when the
  ``snowballstemmer`` package is installed, with its pure-Python stemmers (what orc used before);
- building the indexes: orc's one inverted index per document (what the search cache keeps), ``bm25s`` over all
  spans at once and ``bm25s`` per document;
- ``--queries`` queries of 2-4 words, the 10 best spans: orc scoring the union of the per-document indexes, and
  ``bm25s.retrieve`` over its one index (``bm25s`` is skipped when it is not installed).

``python -m bench.ranking [--documents 50 --spans-per-document 200 --queries 200]``
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.common import BenchResult, summarize
from bench.documents_common import exit_with, paragraph, standalone, vocabulary
from orc.text import Postings, best, index_passages, stem, tokenize

_ENDINGS = ("", "", "", "s", "ing", "ed", "ation", "ly", "ness", "ment", "er", "ies")
LIMIT = 10


def configure(parser: argparse.ArgumentParser) -> None:
    """Options."""
    parser.add_argument("--documents", type=int, default=50)
    parser.add_argument("--spans-per-document", type=int, default=200)
    parser.add_argument("--queries", type=int, default=200)


def _timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = action()
    return (time.perf_counter() - started) * 1000, value


def _per_query(queries: Sequence[list[str]], search: Callable[[list[str]], Any]) -> dict[str, float]:
    search(queries[0])  # warm-up
    return summarize([_timed(lambda query=query: search(query))[0] for query in queries])


async def run(args: argparse.Namespace) -> BenchResult:
    """Build the corpus, then time tokenizing, indexing and querying."""
    rng = random.Random(11)
    words = [word + rng.choice(_ENDINGS) for word in vocabulary()]
    documents = [[paragraph(rng, words, 750) for _ in range(args.spans_per_document)] for _ in range(args.documents)]
    spans = sum(len(document) for document in documents)
    # One common word and 1-3 rarer ones: most queries then match many spans, the costly case.
    queries = [
        tokenize(" ".join([rng.choice(words[:50]), *rng.sample(words[:1500], rng.randint(1, 3))]))
        for _ in range(args.queries)
    ]
    result = BenchResult(name="ranking")
    rows: list[dict[str, Any]] = []

    stem.cache_clear()
    cold_ms, tokens = _timed(lambda: [[tokenize(span) for span in document] for document in documents])
    warm_ms, _ = _timed(lambda: [[tokenize(span) for span in document] for document in documents])
    rows.append({"step": "tokenize every span, stem cache empty", "engine": "orc.text", "ms": round(cold_ms, 1)})
    rows.append({"step": "tokenize every span, stem cache warm", "engine": "orc.text", "ms": round(warm_ms, 1)})
    distinct = sorted(
        {word for document in documents for span in document for word in re.findall(r"[a-z]+", span.lower())}
    )
    rows.extend(_stemmers(distinct))

    build_ms, indexes = _timed(lambda: [index_passages(document) for document in tokens])
    rows.append(
        {"step": f"index {spans} spans, one index per document", "engine": "orc.text", "ms": round(build_ms, 1)}
    )
    weights = [1.0] * len(indexes)
    rows.append(
        {"step": f"query, {LIMIT} best of {spans} spans", "engine": "orc.text"}
        | _per_query(queries, lambda query: best(query, indexes, weights, limit=LIMIT))
    )
    agreement = _with_bm25s(rows, tokens, queries, indexes, spans)

    result.rows = rows
    result.details = {"spans": spans, "distinct_words": len(distinct), **agreement}
    print(", ".join(f"{key}: {value}" for key, value in result.details.items()))
    return result


def _stemmers(distinct: list[str]) -> list[dict[str, Any]]:
    """Stemming each distinct word once: PyStemmer, and the pure-Python snowballstemmer when installed."""
    import Stemmer

    rows = []
    stemmer = Stemmer.Stemmer("english", 0)
    elapsed, _ = _timed(lambda: [stemmer.stemWord(word) for word in distinct])
    rows.append({"step": f"stem {len(distinct)} distinct words", "engine": "PyStemmer", "ms": round(elapsed, 1)})
    if importlib.util.find_spec("snowballstemmer") is not None:
        from snowballstemmer.english_stemmer import EnglishStemmer

        pure = EnglishStemmer()
        elapsed, _ = _timed(lambda: [pure.stemWord(word) for word in distinct])
        rows.append(
            {"step": f"stem {len(distinct)} distinct words", "engine": "snowballstemmer", "ms": round(elapsed, 1)}
        )
    return rows


def _with_bm25s(
    rows: list[dict[str, Any]],
    tokens: list[list[list[str]]],
    queries: list[list[str]],
    indexes: list[Postings],
    spans: int,
) -> dict[str, Any]:
    """The ``bm25s`` rows, and how often its 10 best spans are orc's (same k1, b and idf; ties may differ)."""
    if importlib.util.find_spec("bm25s") is None:
        return {"bm25s": "not installed"}
    import bm25s

    flat = [span for document in tokens for span in document]

    def build(corpus: list[list[str]]) -> Any:
        retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        retriever.index(corpus, show_progress=False)
        return retriever

    build_ms, retriever = _timed(lambda: build(flat))
    rows.append({"step": f"index {spans} spans, one index", "engine": "bm25s", "ms": round(build_ms, 1)})
    per_document_ms, _ = _timed(lambda: [build(document) for document in tokens])
    rows.append(
        {"step": f"index {spans} spans, one index per document", "engine": "bm25s", "ms": round(per_document_ms, 1)}
    )

    def retrieve(query: list[str]) -> Any:
        return retriever.retrieve([query], k=LIMIT, show_progress=False, n_threads=1)

    rows.append({"step": f"query, {LIMIT} best of {spans} spans", "engine": "bm25s"} | _per_query(queries, retrieve))
    starts = [0]
    for document in tokens:
        starts.append(starts[-1] + len(document))
    same = 0
    for query in queries:
        found, scores = retrieve(query)
        # bm25s fills its k results with spans that score 0; orc leaves out spans that share no term.
        theirs = {int(position) for position, value in zip(found[0], scores[0], strict=True) if value > 0}
        ours = {starts[match.group] + match.passage for match in best(query, indexes, limit=LIMIT)}
        same += theirs == ours
    return {"bm25s_version": bm25s.__version__, "queries_with_the_same_top_10": f"{same}/{len(queries)}"}


main = standalone(__doc__.split("\n")[0] if __doc__ else "", run, configure)

if __name__ == "__main__":
    exit_with(main)
