"""The answer request's packing replayed over recorded rankings: which sources would a variant of the packing send?

``python -m bench.finding_hybrid --record --output FILE`` keeps, for each single question of the spent finding sets,
the ranking ``document_chat``'s evidence returned (and each leg's refs). Packing does not depend on the model or on
the embeddings, so a variant of :mod:`orc.graph.packing` is measured here in seconds, over the very rankings the
turns built, instead of re-running the retrieval: source recall (the expected phrase in a sent source of the
target), the misses by cause (``excerpt``: the span is sent cut and its excerpt misses the phrase; ``budget``: the
budget ended before it; ``ranking``: not among the sources a request may hold) and the source tokens.

usage: python -m bench.finding_packing RECORD.json [...] [--variant NAME ...] [--show]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MAX_SOURCES = 40


@contextlib.contextmanager
def _patched(module: Any, **values: Any) -> Iterator[None]:
    old = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(module, name, value)


def _packing(**values: Any) -> Callable[[], contextlib.AbstractContextManager[None]]:
    import orc.graph.packing as packing

    return lambda: _patched(packing, **values)


_ROW: dict[str, Any] = {}
"""The row being replayed (its legs' refs), for the variants that ask which leg found a span."""


def _by_leg(depth: int, cut: str) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """Spans the vector leg ranked in its first ``depth`` and the lexical leg did not rank above it, sent whole
    (``cut`` "whole") or cut from their start ("head") instead of around the question's words; the best
    :data:`~orc.graph.packing.WHOLE_PASSAGES` whole, as of a lexical ranking."""
    import orc.graph.packing as packing

    original = packing._excerpt

    def excerpt(source: Any, weights: dict[str, float], limit: int) -> Any:
        vector, lexical = _ROW.get("vector_refs", []), _ROW.get("lexical_refs", [])
        found = source.ref in vector[:depth] and (
            source.ref not in lexical or lexical.index(source.ref) > vector.index(source.ref)
        )
        if not found:
            return original(source, weights, limit)
        if cut == "whole":
            return source
        return original(source, {}, limit)

    return lambda: _patched(packing, _excerpt=excerpt, WHOLE_PASSAGES_HYBRID=packing.WHOLE_PASSAGES)


VARIANTS: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "baseline": contextlib.nullcontext,
    # How many of the best sources go whole, of a hybrid ranking (WHOLE_PASSAGES_HYBRID) and of a lexical one.
    **{f"hybrid_whole{count}": _packing(WHOLE_PASSAGES_HYBRID=count) for count in (6, 8, 10, 12, 16, 20)},
    **{f"whole{count}": _packing(WHOLE_PASSAGES=count) for count in (4, 8, 10)},
    "all_whole": _packing(EXCERPT_CHARS=1_000_000),
    # With the hybrid head at 6: a span the vector leg ranked (in its first 48) above the lexical leg sent whole, or
    # cut from its start, instead of around the question's words — what knowing each span's leg would give.
    "by_meaning_whole": _by_leg(48, "whole"),
    "by_meaning_head": _by_leg(48, "head"),
}


def replay(rows: list[dict[str, Any]], variant: str, show: bool) -> dict[str, Any]:
    from orc.contracts import RetrievalLegs, SourceSpan
    from orc.evaluation.scoring import normal
    from orc.graph.answer import answer_sources
    from orc.models.tokens import EstimatedTokens
    from orc.settings import Settings

    counter = EstimatedTokens()
    budget = Settings().sources_tokens
    hits = 0
    won: list[str] = []
    causes: Counter[str] = Counter()
    tokens: list[int] = []
    shown: list[dict[str, Any]] = []
    with VARIANTS[variant]():
        for row in rows:
            _ROW.clear()
            _ROW.update(row)
            sources = [SourceSpan(**s) for s in row["sources"]]
            phrase = normal(row["expect"])
            legs = RetrievalLegs(legs=["lexical", "vector"] if row["vector_refs"] else ["lexical"])
            sent = answer_sources(
                {"question": row["question"], "sources": sources, "retrieval": legs},  # type: ignore[typeddict-item]
                counter,
                budget,
            )
            tokens.append(sum(counter.count(s.text) for s in sent))
            if any(s.document == row["target"] and phrase in normal(s.text) for s in sent):
                hits += 1
                won.append(row["id"])
                continue
            answers = [s for s in sources if s.document == row["target"] and phrase in normal(s.text)]
            sent_refs = {s.ref: s for s in sent}
            answer = next((s for s in answers if s.ref in sent_refs), None)
            rank = min(([s.ref for s in sources].index(a.ref) + 1 for a in answers), default=None)
            cause = "excerpt" if answer else ("ranking" if rank is None or rank > MAX_SOURCES else "budget")
            causes[cause] += 1
            if show and answer:
                shown.append(
                    {
                        "id": row["id"],
                        "question": row["question"],
                        "expect": row["expect"],
                        "rank": [s.ref for s in sources].index(answer.ref) + 1,
                        "vector": row["vector_refs"].index(answer.ref) + 1
                        if answer.ref in row["vector_refs"]
                        else None,
                        "lexical": (
                            row["lexical_refs"].index(answer.ref) + 1 if answer.ref in row["lexical_refs"] else None
                        ),
                        "excerpt": sent_refs[answer.ref].text,
                        "span": answer.text,
                    }
                )
    result: dict[str, Any] = {
        "source_recall": f"{hits}/{len(rows)}",
        "causes": dict(causes),
        "tokens_p50": statistics.median(tokens) if tokens else 0,
    }
    result["hits"] = won
    if show:
        result["excerpt_misses"] = shown
    return result


def load(paths: list[Path]) -> list[dict[str, Any]]:
    """The recorded single questions of ``paths`` (``bench.finding_hybrid --record`` output), baseline variant."""
    rows = []
    for path in paths:
        for row in json.loads(path.read_text())["rows"]:
            recorded = row["baseline"]
            rows.append({"id": row["id"], "set": row["set"], **recorded})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("record", nargs="+", type=Path)
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS))
    parser.add_argument("--show", action="store_true", help="print each excerpt miss: question, excerpt, span")
    args = parser.parse_args()
    rows = load(args.record)
    base: set[str] | None = None
    for variant in args.variant or ["baseline"]:
        result = replay(rows, variant, args.show)
        hits = set(result.pop("hits"))
        if base is None:
            base = hits
        else:  # against the first variant named
            result["won"], result["lost"] = sorted(hits - base), sorted(base - hits)
        print(variant, json.dumps(result, indent=1 if args.show else None))


if __name__ == "__main__":
    main()
