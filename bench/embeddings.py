"""Hybrid retrieval with embeddings on: what a turn pays for its vector leg, how processing batches, which fusion.

Targets (issue 24): one embedding request per turn at most and never an extra chat-model call; a turn's added
time ≤ one embedding round trip + 5 ms; processing 200 pages embeds in batches (the requests are counted).

Set-up: the loopback OpenAI-compatible endpoint of the wire tests (``tests/models/openai_endpoint.py``: hashed
bag-of-words vectors of 256 dimensions) in a process of its own, reached over real HTTP through langchain-openai,
each embedding request held ``--delay-ms`` on the server as a model's compute time. Two embedded processes
(SQLite + local folder, offline model) with the three sample documents attached to one conversation, one with
``ORC_EMBEDDINGS=off`` and one with ``openai:<model>`` + ``ORC_EMBEDDINGS_BASE_URL``; their turns alternate so
load from other work hits both alike.

1. ``turns``: ``--turns`` warm turns each (after warm-up); embedding requests per turn counted at the endpoint,
   chat-model calls from ``metadata.model_calls``; the turn's added time is on − off of each pair of adjacent
   turns, compared with one query embedding timed alone through the same client between the pairs (the round
   trip); and the turn's added CPU time (this process's, on − off), the part that does not depend on the load
   other work puts on the machine. Run twice: the endpoint answering base64 float32 (what the OpenAI SDK asks
   for; OpenAI, Azure OpenAI, vLLM, llama.cpp answer so) and answering JSON floats anyway (as Ollama does).
2. ``pages``: a ``--pages``-page PDF (one span per page) processed with embeddings on, with the default batch
   size and with 64; requests counted and the processing time compared with embeddings off.
3. ``fusion``: recall@5 / @8 of the span holding the expected phrase, over the ten real documents of
   ``bench/real_documents`` and their two question sets (answerable questions), for the lexical leg alone, the
   vector leg alone, reciprocal rank fusion and a min-max normalized score blend. No semantic model is available
   offline here: the vector leg is the hashed bag of words *and character trigrams*
   (:class:`orc.testing.embeddings.HashedEmbeddingModel`), so this compares fusion methods, not the gain a real
   embedding model brings.

``python -m bench.embeddings [--turns 60 --delay-ms 20 --pages 200]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from bench.common import REPO, SAMPLE_DOCS, SAMPLE_NAMES, BenchResult, Check, summarize
from bench.documents_common import exit_with, standalone
from orc.composition import Services, build_runtime
from orc.composition.tuning import TUNED, Tuning
from orc.documents.intake.uploads import Upload
from orc.documents.parsing.extraction import extract
from orc.models.embeddings import OpenAIEmbeddingModel, build_embedding_model
from orc.principal import LOCAL_PRINCIPAL
from orc.search.fusion import reciprocal_rank_fusion
from orc.search.indexing import indexed_document
from orc.search.memory import MemorySearchEngine
from orc.search.port import ScopeFields, SearchFilter, SearchRequest, index_version, owner_key
from orc.search.retriever import Retriever, Target
from orc.search.text_store import DocumentText, process_extracted
from orc.search.vectors import normalized
from orc.settings import Settings
from orc.testing.embeddings import HashedEmbeddingModel
from orc.turns import TurnRequest, TurnResult
from tests.documents.pdf_factory import make_pdf
from tests.emulators import free_port
from tests.models.openai_endpoint import OpenAIEndpoint

QUESTIONS = [
    "What is the monthly rent?",
    "How many vacation days do new employees get?",
    "How long does the warranty last?",
    "How much notice ends the lease?",
    "Is water damage covered?",
    "How long may expenses wait before they are filed?",
]
SET = Path(__file__).resolve().parent / "real_documents"
ADDED_SLACK_MS = 5.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--turns", type=int, default=60, help="timed turns per process")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="server time of one embedding request")
    parser.add_argument("--pages", type=int, default=200, help="pages of the processed PDF")


class Endpoint:
    """The loopback endpoint in a process of its own (so its work does not share the bench's interpreter), with
    the sizes of the embedding requests it received at ``GET /stats``."""

    def __init__(self, delay_ms: float, *, answers_floats: bool = False) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        command = [sys.executable, "-m", "bench.embeddings", "--serve-endpoint", str(self.port), str(delay_ms)]
        self._process = subprocess.Popen(
            [*command, "floats" if answers_floats else "base64"],
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    async def started(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(httpx.HTTPError):
                await self.inputs()
                return
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the embeddings endpoint did not start")
            await asyncio.sleep(0.05)  # polling a starting process: it gives no other signal

    async def inputs(self) -> list[int]:
        """How many texts each embedding request carried, in order."""
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.get(f"http://127.0.0.1:{self.port}/stats")
            response.raise_for_status()
            counts: list[int] = response.json()["inputs"]
            return counts

    def stop(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=10)


def serve_endpoint(port: int, delay_ms: float, answers_floats: bool) -> None:
    """Run the endpoint on ``port`` until terminated (the child process of :class:`Endpoint`)."""
    endpoint = OpenAIEndpoint()
    endpoint.embedding_delay = delay_ms / 1000
    endpoint.answers_floats = answers_floats

    async def stats() -> dict[str, list[int]]:
        return {"inputs": [len(body["input"]) for body in endpoint.embedding_requests]}

    endpoint.app.get("/stats")(stats)
    uvicorn.run(endpoint.app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")


def _settings(home: str, running: Endpoint | None, **extra: Any) -> Settings:
    if running is None:
        return Settings(home=Path(home), **extra)
    return Settings(home=Path(home), embeddings="openai:bench-embed", embeddings_base_url=running.base_url, **extra)


async def _turn(services: Services, question: str) -> tuple[float, float, TurnResult]:
    """Wall and CPU milliseconds of one turn (CPU: this process's, so not the endpoint's)."""
    started, cpu = time.perf_counter(), time.process_time()
    result = await services.orchestrator.ask(
        TurnRequest(question=question, conversation_id="c", blob_names=SAMPLE_NAMES)
    )
    elapsed, spent = (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000
    assert isinstance(result, TurnResult)
    return elapsed, spent, result


async def _turns(args: argparse.Namespace, running: Endpoint, result: BenchResult, wire: str) -> None:
    """Turns with the vectors answered as ``base64`` (OpenAI, Azure, vLLM) or as ``float`` (Ollama)."""
    uploads = [Upload(name, data) for name, data in SAMPLE_DOCS.items()]
    async with AsyncExitStack() as stack:
        homes = [stack.enter_context(tempfile.TemporaryDirectory(prefix="orc-bench-embed-")) for _ in range(2)]
        off = await stack.enter_async_context(build_runtime(_settings(homes[0], None)))
        settings = _settings(homes[1], running)
        defaults = Settings()
        model = build_embedding_model(
            "openai:bench-embed",
            base_url=running.base_url,
            timeout=defaults.model_timeout_seconds,
            max_retries=defaults.model_max_retries,
            batch_size=TUNED.embeddings_batch_size,
            resources=stack,
        )
        on = await stack.enter_async_context(build_runtime(settings))
        for services in (off, on):
            await services.foundation.session_files.add(LOCAL_PRINCIPAL, "c", uploads, wait_seconds=60)
        for question in QUESTIONS:  # warm-up: file caches, vectors cached, connections open
            await _turn(off, question)
            await _turn(on, question)
        assert isinstance(model, OpenAIEmbeddingModel)
        await model.embed(["warm-up"], "query")
        times: dict[str, list[float]] = {"off": [], "on": []}
        cpu: dict[str, list[float]] = {"off": [], "on": []}
        round_trips: list[float] = []
        trip_cpu: list[float] = []
        calls: dict[str, int] = {"off": 0, "on": 0}
        per_turn: list[int] = []
        legs: set[str] = set()
        for number in range(args.turns):
            question = QUESTIONS[number % len(QUESTIONS)]
            for name, services in (("off", off), ("on", on)) if number % 2 else (("on", on), ("off", off)):
                before = len(await running.inputs())
                elapsed, spent, turn = await _turn(services, question)
                times[name].append(elapsed)
                cpu[name].append(spent)
                calls[name] += turn.metadata.model_calls
                if name == "on":
                    per_turn.append(len(await running.inputs()) - before)
                    assert turn.metadata.retrieval is not None
                    legs.add("+".join(turn.metadata.retrieval.legs))
            # The round trip alone, through the same kind of client, between the turns.
            started, spent = time.perf_counter(), time.process_time()
            await model.embed([question], "query")
            round_trips.append((time.perf_counter() - started) * 1000)
            trip_cpu.append((time.process_time() - spent) * 1000)
    off_ms, on_ms, trip_ms = summarize(times["off"]), summarize(times["on"]), summarize(round_trips)
    paired = summarize([on - off for on, off in zip(times["on"], times["off"], strict=True)])
    cpu_added = summarize([on - off for on, off in zip(cpu["on"], cpu["off"], strict=True)])
    result.rows += [
        {"measure": f"[{wire}] turn, embeddings off", **off_ms},
        {"measure": f"[{wire}] turn, embeddings on", **on_ms},
        {"measure": f"[{wire}] turn's added time (on − off, paired)", **paired},
        {"measure": f"[{wire}] one query embedding alone (round trip)", **trip_ms},
        {"measure": f"[{wire}] turn's added CPU time (on − off, paired)", **cpu_added},
        {"measure": f"[{wire}] CPU time of one query embedding alone (the client's)", **summarize(trip_cpu)},
    ]
    result.details[f"turns_{wire}"] = {
        "legs": sorted(legs),
        "embedding_requests_per_turn": {"max": max(per_turn), "mean": statistics.fmean(per_turn)},
        "chat_model_calls": calls,
        "delay_ms": args.delay_ms,
        "load_average": os.getloadavg(),
    }
    result.checks += [
        Check(f"[{wire}] embedding requests per turn (max)", max(per_turn), 1, unit="requests"),
        Check(f"[{wire}] extra chat-model calls with embeddings on", calls["on"] - calls["off"], 0, unit="calls"),
        Check(
            f"[{wire}] turn's added time p50 − round trip p50 (≤ {ADDED_SLACK_MS:g} ms)",
            round(paired["p50"] - trip_ms["p50"], 3),
            ADDED_SLACK_MS,
        ),
        Check(f"[{wire}] turn's added CPU time p50", cpu_added["p50"], ADDED_SLACK_MS),
    ]


async def _pages(args: argparse.Namespace, running: Endpoint, result: BenchResult) -> None:
    words = "clause party notice payment term schedule delivery warranty liability invoice".split()
    pages = [
        [f"Page {number}: " + " ".join(words[(number + shift) % len(words)] for shift in range(60))]
        for number in range(args.pages)
    ]
    pdf = make_pdf(pages)
    default = TUNED.embeddings_batch_size
    for batch_size in (default, 64):
        seconds: dict[str, float] = {}
        batches: list[int] = []
        for name, use in (("off", None), ("on", running)):
            with tempfile.TemporaryDirectory(prefix="orc-bench-embed-") as home:
                # Parsing in threads: a worker process's start-up would be timed too.
                settings = _settings(home, use, extraction_processes=0)
                async with build_runtime(settings, tuning=Tuning(embeddings_batch_size=batch_size)) as services:
                    before = len(await running.inputs())
                    started = time.perf_counter()
                    added = await services.foundation.session_files.add(
                        LOCAL_PRINCIPAL, "p", [Upload("long.pdf", pdf)], wait_seconds=600
                    )
                    seconds[name] = time.perf_counter() - started
                    assert added.files[0].status == "ready", added.files[0].status
                    if use is not None:
                        batches = (await running.inputs())[before:]
        spans = sum(batches)
        result.rows.append(
            {
                "measure": f"process a {args.pages}-page PDF, ORC_EMBEDDINGS_BATCH_SIZE={batch_size}",
                "spans": spans,
                "embedding requests": len(batches),
                "texts per request": batches,
                "seconds off": round(seconds["off"], 3),
                "seconds on": round(seconds["on"], 3),
            }
        )
        result.checks.append(
            Check(
                f"embedding requests for {args.pages} pages (batches of {batch_size})",
                len(batches),
                math.ceil(spans / batch_size),
                unit="requests",
            )
        )


def _real_documents() -> tuple[list[str], list[DocumentText]]:
    names, texts = [], []
    for path in sorted((SET / "documents").iterdir()):
        names.append(path.name)
        texts.append(process_extracted(extract(path.read_bytes(), path.name, None)))
    return names, texts


def _questions() -> list[tuple[str, str]]:
    found = []
    for name in ("questions.json", "held_out.json"):
        for item in json.loads((SET / name).read_text(encoding="utf-8"))["questions"]:
            if item.get("expect") and not item.get("follows"):
                found.append((item["q"], item["expect"]))
    return found


Key = tuple[str, int]
"""(document, span ordinal)."""


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _blend(
    lexical: Sequence[tuple[Key, float]], vector: Sequence[tuple[Key, float]], limit: int, alpha: float = 0.5
) -> list[Key]:
    """A convex blend of min-max normalized scores (the usual alternative to RRF)."""

    def scaled(hits: Sequence[tuple[Key, float]]) -> dict[Key, float]:
        if not hits:
            return {}
        top, bottom = max(score for _, score in hits), min(score for _, score in hits)
        spread = (top - bottom) or 1.0
        return {key: (score - bottom) / spread for key, score in hits}

    left, right = scaled(lexical), scaled(vector)
    scores = {key: alpha * left.get(key, 0.0) + (1 - alpha) * right.get(key, 0.0) for key in {*left, *right}}
    return sorted(scores, key=lambda key: -scores[key])[:limit]


async def _fusion(result: BenchResult) -> None:
    names, texts = _real_documents()
    model = HashedEmbeddingModel(dimensions=512, batch_size=4096, trigrams=True)
    engine = MemorySearchEngine()
    retriever = Retriever(engine)
    scope = ScopeFields(organization="bench", owner=owner_key("organization", "bench"))
    targets = []
    for name, text in zip(names, texts, strict=True):
        matrix = normalized(await model.embed([span.text for span in text.spans], "spans"))
        version = index_version(text.extracted_text_hash, text.chunking_version)
        targets.append(Target(document_id=name, name=name, version=version, scope=scope))
        await engine.upsert(
            indexed_document(text, document_id=name, scope=scope, vectors=matrix.tolist(), vector_model="hashed")
        )
    by_name = dict(zip(names, texts, strict=True))
    questions = _questions()
    depth = 24
    methods = ("lexical", "vector", "rrf", "blend")
    hits_at: dict[str, dict[int, int]] = {method: {5: 0, 8: 0} for method in methods}
    for question, expect in questions:
        lexical = (await retriever.retrieve(question, "bench", targets, limit=depth)).spans
        query = normalized(await model.embed([question], "query"))[0]
        vector = await engine.search(
            SearchRequest(SearchFilter("bench"), depth, vector=query.tolist(), vector_model="hashed", mode="vector")
        )
        lexical_keys = [(hit.target.document_id, hit.span.ordinal) for hit in lexical]
        vector_keys = [(hit.document_id, hit.span.ordinal) for hit in vector]
        ranked = {
            "lexical": lexical_keys,
            "vector": vector_keys,
            "rrf": [key for key, _ in reciprocal_rank_fusion([lexical_keys, vector_keys], 8)],
            "blend": _blend(
                [(key, hit.score) for key, hit in zip(lexical_keys, lexical, strict=True)],
                [(key, hit.score) for key, hit in zip(vector_keys, vector, strict=True)],
                8,
            ),
        }
        phrase = _normal(expect)
        for method, keys in ranked.items():
            found = [_normal(by_name[document].spans[span].text) for document, span in keys]
            for k in (5, 8):
                hits_at[method][k] += any(phrase in text for text in found[:k])
    for method in methods:
        result.rows.append(
            {
                "measure": f"recall, {method}",
                "questions": len(questions),
                "@5": round(hits_at[method][5] / len(questions), 3),
                "@8": round(hits_at[method][8] / len(questions), 3),
            }
        )
    result.details["fusion"] = {"documents": names, "questions": len(questions)}


async def run(args: argparse.Namespace) -> BenchResult:
    result = BenchResult(name="embeddings")
    for wire in ("base64", "float"):
        running = Endpoint(args.delay_ms, answers_floats=wire == "float")
        try:
            await running.started()
            await _turns(args, running, result, wire)
            if wire == "base64":
                await _pages(args, running, result)
        finally:
            running.stop()
    await _fusion(result)
    return result


main = standalone(__doc__ or "", run, configure)

if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--serve-endpoint":
        serve_endpoint(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "floats")
    else:
        exit_with(main)
