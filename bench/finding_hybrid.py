"""Where the hybrid loses an answer, by cause: the finding sets' single questions with MiniLM, each leg recorded.

For each answerable single question (documents processed and embedded once per pair, as ``--fast`` does), the
retrieval of ``document_chat``'s evidence is run with its two legs recorded — the lexical ranking and the vector
leg's hits as the retriever fuses them — and the answer request is packed as the answer node packs it. A case
whose request does not hold the expected phrase is put down to one cause:

- ``no_leg``: the span holding it is in neither leg's ranking;
- ``fused_out``: a leg ranks it, the fusion puts it past the sources a request may hold (40);
- ``excerpt``: it is among them and sent as an excerpt whose sentences miss the phrase;
- ``budget``: it is among them and the token budget ends before it.

``documents.search`` (limit 8) is recorded the same way: the answer's rank in each leg and in the fusion.
``--variant NAME`` (repeatable) runs each question again under a variant of the retriever or the packing, in the
same process (``VARIANTS``); ``baseline`` is the code as it stands, ``rrf`` the plain fusion before the seventh
round.

usage: python -m bench.finding_hybrid [--set NAME ...] [--variant NAME ...] [--output FILE] [--show] [--lexical]
       [--record]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.finding import SETS, SharedConversations, _settings, minilm_server

SPENT = [
    "finding-blind_4",
    "finding-blind_5",
    "finding-held_out_5",
    "finding-held_out_2",
    "finding-blind_3",
    "finding-blind_6",
    "finding-held_out",
    "finding-blind",
    "finding-blind_7",
]
MAX_SOURCES = 40


class Recorder:
    """The legs of the latest retrieval, recorded around the retriever's own leg functions."""

    def __init__(self) -> None:
        self.lexical: list[Any] = []
        self.vector: list[Any] = []

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        import orc.search.retriever as retriever

        lexical, vector = retriever.lexical_ranking, retriever.vector_ranking

        async def recorded_lexical(*args: Any, **kwargs: Any) -> Any:
            ranked, rounds = await lexical(*args, **kwargs)
            self.lexical = list(ranked)
            return ranked, rounds

        async def recorded_vector(*args: Any, **kwargs: Any) -> Any:
            hits, error = await vector(*args, **kwargs)
            self.vector = list(hits)
            return hits, error

        retriever.lexical_ranking, retriever.vector_ranking = recorded_lexical, recorded_vector  # type: ignore[assignment]
        try:
            yield
        finally:
            retriever.lexical_ranking, retriever.vector_ranking = lexical, vector  # type: ignore[assignment]

    def reset(self) -> None:
        self.lexical, self.vector = [], []


@contextlib.contextmanager
def _both(*variants: contextlib.AbstractContextManager[None]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for variant in variants:
            stack.enter_context(variant)
        yield


def _rank(refs: list[str], wanted: set[str]) -> int | None:
    return next((rank for rank, ref in enumerate(refs, start=1) if ref in wanted), None)


@contextlib.contextmanager
def leg_heads(heads: int, slots: int) -> Iterator[None]:
    """The retriever's fusion with each leg's first ``heads`` spans among its first ``slots`` (0: plain RRF,
    ``main``'s before the seventh round)."""
    import orc.search.targets as targets

    original = targets.with_leg_heads

    def variant(fused: Any, rankings: Any) -> Any:
        return original(fused, rankings, heads, slots) if heads else list(fused)

    targets.with_leg_heads = variant  # type: ignore[assignment]
    try:
        yield
    finally:
        targets.with_leg_heads = original  # type: ignore[assignment]


@contextlib.contextmanager
def without_rerank() -> Iterator[None]:
    """The lexical leg without its sentence-level re-rank (its weight 0): does it demote what the vector leg
    finds?"""
    import orc.search.lexical_leg as lexical_leg

    original = lexical_leg.RERANK_WEIGHT
    lexical_leg.RERANK_WEIGHT = 0.0
    try:
        yield
    finally:
        lexical_leg.RERANK_WEIGHT = original


VARIANTS: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    "baseline": contextlib.nullcontext,
    "rrf": lambda: leg_heads(0, 0),
    "heads1": lambda: leg_heads(1, 5),
    "heads2": lambda: leg_heads(2, 5),
    "heads2_slots6": lambda: leg_heads(2, 6),
    "heads3_slots6": lambda: leg_heads(3, 6),
    "heads4_slots8": lambda: leg_heads(4, 8),
    "no_rerank": without_rerank,
    "rrf_no_rerank": lambda: _both(leg_heads(0, 0), without_rerank()),
}


async def run_set(
    name: str, url: str | None, variants: list[str], args_show: bool = False, record: bool = False
) -> list[dict[str, Any]]:
    from orc.composition import build_runtime, model_from_settings
    from orc.documents.catalog.availability import DocumentScope
    from orc.evaluation.cases import load_cases
    from orc.evaluation.scoring import normal
    from orc.graph.answer import answer_sources
    from orc.models.tokens import EstimatedTokens
    from orc.principal import LOCAL_PRINCIPAL

    questions, documents = SETS[name]
    cases = load_cases(questions, documents)
    counter = EstimatedTokens()
    recorder = Recorder()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="orc-finding-home-") as home, recorder.installed():
        settings = _settings(Path(home), url)
        async with contextlib.AsyncExitStack() as stack:
            model = model_from_settings(settings, resources=stack)
            services = await stack.enter_async_context(build_runtime(settings, model=model))
            conversations = SharedConversations(services, documents)
            for case in cases:
                if not case.answerable or case.follow_up:
                    continue
                conversation = await conversations.of(case.docs)
                question = case.scored.question
                phrase = normal(case.scored.expect or "")
                row: dict[str, Any] = {"set": name, "id": case.id}
                for variant in variants:
                    with VARIANTS[variant]():
                        recorder.reset()
                        found = await services.documents.mcp.document_chat.answer(
                            LOCAL_PRINCIPAL, conversation, question, list(case.docs), mode="evidence"
                        )
                        lexical, vector = recorder.lexical, recorder.vector
                        sources = found.metadata.sources
                        sent = answer_sources(
                            {  # type: ignore[typeddict-item]
                                "question": question,
                                "sources": sources,
                                "retrieval": found.metadata.retrieval,
                            },
                            counter,
                            settings.sources_tokens,
                        )
                        answers = {
                            ranked.ref
                            for ranked in [*lexical, *vector]
                            if ranked.target.name == case.target and phrase in normal(ranked.span.text)
                        } | {s.ref for s in sources if s.document == case.target and phrase in normal(s.text)}
                        hit = any(s.document == case.target and phrase in normal(s.text) for s in sent)
                        fused = _rank([s.ref for s in sources], answers)
                        cause = None
                        if not hit:
                            sent_refs = {s.ref for s in sent}
                            if fused is None and not (
                                _rank([r.ref for r in lexical], answers) or _rank([r.ref for r in vector], answers)
                            ):
                                cause = "no_leg"
                            elif fused is None or fused > MAX_SOURCES:
                                cause = "fused_out"
                            elif answers & sent_refs:
                                cause = "excerpt"
                            else:
                                cause = "budget"
                        result: dict[str, Any] = {
                            "hit": hit,
                            "cause": cause,
                            "lexical": _rank([r.ref for r in lexical], answers),
                            "vector": _rank([r.ref for r in vector], answers),
                            "fused": fused,
                            "tokens": sum(counter.count(s.text) for s in sent),
                        }
                        if record:
                            # What bench.finding_packing replays: the ranking the answer node packs, and each leg's.
                            result["question"] = question
                            result["expect"] = case.scored.expect
                            result["target"] = case.target
                            result["sources"] = [s.model_dump() for s in sources]
                            result["lexical_refs"] = [r.ref for r in lexical]
                            result["vector_refs"] = [r.ref for r in vector]
                        if cause in ("excerpt", "budget") and args_show:
                            span = next(s for s in sources if s.ref in answers)
                            excerpt = next((s.text for s in sent if s.ref == span.ref), None)
                            result["question"] = question
                            result["expect"] = case.scored.expect
                            result["span"] = span.text
                            result["excerpt"] = excerpt
                        recorder.reset()
                        search = await services.documents.library.search(
                            LOCAL_PRINCIPAL, DocumentScope(session_id=conversation), question, limit=8
                        )
                        names = [(h.filename, h.text) for h in search.results]
                        result["search"] = next(
                            (
                                rank
                                for rank, (filename, text) in enumerate(names, start=1)
                                if filename == case.target and phrase in normal(text)
                            ),
                            None,
                        )
                        search_answers = {
                            r.ref
                            for r in [*recorder.lexical, *recorder.vector]
                            if r.target.name == case.target and phrase in normal(r.span.text)
                        }
                        result["search_lexical"] = _rank([r.ref for r in recorder.lexical], search_answers)
                        result["search_vector"] = _rank([r.ref for r in recorder.vector], search_answers)
                        row[variant] = result
                rows.append(row)
    return rows


def summary(rows: list[dict[str, Any]], variant: str) -> dict[str, Any]:
    results = [row[variant] for row in rows]
    causes = Counter(r["cause"] for r in results if r["cause"])
    tokens = sorted(r["tokens"] for r in results)
    return {
        "source_recall": f"{sum(r['hit'] for r in results)}/{len(results)}",
        "recall_at_5": f"{sum(bool(r['search'] and r['search'] <= 5) for r in results)}/{len(results)}",
        "causes": dict(causes),
        "tokens_p50": tokens[len(tokens) // 2] if tokens else 0,
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    variants = args.variant or ["baseline"]
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "sets": {}}
    everything: list[dict[str, Any]] = []
    with contextlib.nullcontext(None) if args.lexical else minilm_server() as url:
        for name in args.set or SPENT:
            started = time.perf_counter()
            rows = await run_set(name, url, variants, args.show, args.record)
            everything += rows
            out["sets"][name] = {variant: summary(rows, variant) for variant in variants}
            out["sets"][name]["seconds"] = round(time.perf_counter() - started, 1)
            print(name, json.dumps(out["sets"][name]), file=sys.stderr, flush=True)
    out["all"] = {variant: summary(everything, variant) for variant in variants}
    out["rows"] = everything
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", help=f"a set name (default: the spent sets, {', '.join(SPENT)})")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS))
    parser.add_argument("--output", type=Path)
    parser.add_argument("--show", action="store_true", help="keep the question, span and excerpt of each excerpt miss")
    parser.add_argument("--lexical", action="store_true", help="without embeddings (no MiniLM server)")
    parser.add_argument(
        "--record", action="store_true", help="keep each case's ranked sources and legs (for bench.finding_packing)"
    )
    args = parser.parse_args()
    from orc.models.guard import forbid_model_requests

    forbid_model_requests()
    results = asyncio.run(main_async(args))
    print(json.dumps(results["all"], indent=1))
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
