"""Storage round trips of a warm ``document_chat`` turn on the production wiring (target: ≤ 6 per turn).

The production wiring is ``Settings(storage="azure")``: conversations, catalog and LangGraph checkpoints all in
the collection store (Cosmos DB in production), documents in the blob store, with the stores passed in. Every
storage call is recorded — its name (``collection.operation`` or ``blobs.operation``) and its wall time — through
:mod:`orc.testing.storage`'s observed stores, which wrap any provider and blob store.

Two variants:

- ``memory``: memory stores. Counts only; the times are those of Python dictionaries.
- ``emulators``: the product's own ``azure_stores(settings)`` — Cosmos DB through ``cosmosdb-server`` and Blob
  Storage through Azurite, started on free 127.0.0.1 ports with ``tests/emulators.py``'s ``run_emulator``
  (bounded readiness polling, terminated afterwards). Skipped, with a note, when the emulators are not
  installed (``tools/emulators/node_modules/.bin``; ``make emulators``) or do not start. The emulators are
  local Node.js processes: their per-call times show the client-side cost of each round trip plus a loopback
  hop, not the latency of the real services in a region.

For 1 and 3 attached documents, on a conversation of its own: upload (processed before the turn), a first turn
(cache miss), a second turn (cache hit, warm-up), then ``repeats`` warm turns whose storage calls are
recorded. Every recorded turn must be a ``document_chat`` cache hit and make the same calls.
"""

from __future__ import annotations

import contextlib
import statistics
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import SAMPLE_DOCS, SAMPLE_NAMES, BenchResult, Check, bench_settings, scripted_model, temporary_home
from orc.composition import Stores, azure_stores, build_runtime
from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.storage.memory import MemoryBlobStore, MemoryCollectionProvider
from orc.storage.ports import BlobStore, CollectionProvider
from orc.testing.storage import ObservedBlobStore, ObservedProvider
from orc.turns import TurnRequest

ROUND_TRIP_LIMIT = 6
DOCUMENT_COUNTS = (1, 3)
UPLOAD_WAIT_SECONDS = 30.0
QUESTIONS = ("What is the monthly rent?", "And the notice period?")


# -- recording wrappers ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One recorded storage call: its name, wall time and this process's CPU time meanwhile (ms)."""

    name: str
    wall_ms: float
    cpu_ms: float


@dataclass
class CallLog:
    """Storage calls in the order they were made, across every wrapped store.

    ``cpu_ms`` is the bench process's CPU time (all threads) during the call: in a turn run alone, that is the
    client side of the call (SDK, serialization, HTTP); the rest of ``wall_ms`` is spent waiting for the
    store (for the emulators, another process on the same 2 cores).
    """

    calls: list[Call] = field(default_factory=list)

    def reset(self) -> None:
        """Forget the calls recorded so far."""
        self.calls.clear()

    @contextlib.contextmanager
    def timing(self, name: str) -> Iterator[None]:
        """Record ``name`` with the wall and CPU time of the block (also when the call raises)."""
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            wall = (time.perf_counter() - started) * 1000
            self.calls.append(Call(name, wall, (time.process_time() - cpu_started) * 1000))


def recording_stores(collections: CollectionProvider, blobs: BlobStore) -> tuple[Stores, CallLog]:
    """``collections`` and ``blobs`` wrapped so that every call is recorded in one :class:`CallLog`."""
    log = CallLog()
    return Stores(
        collections=ObservedProvider(collections, log.timing), blobs=ObservedBlobStore(blobs, log.timing)
    ), log


# -- the scenario ------------------------------------------------------------------------------------------


async def _scenario(
    variant: str, settings: Settings, stores: Stores, log: CallLog, repeats: int
) -> list[dict[str, Any]]:
    """Warm ``document_chat`` turns with 1 and 3 documents on ``stores``; one row per document count."""
    rows: list[dict[str, Any]] = []
    async with build_runtime(settings, model=scripted_model(), stores=stores) as services:
        orchestrator = services.orchestrator
        for count in DOCUMENT_COUNTS:
            names = SAMPLE_NAMES[:count]
            conversation = f"bench-rt-{count}"
            mutation = await services.foundation.session_files.add(
                LOCAL_PRINCIPAL,
                conversation,
                [Upload(name, SAMPLE_DOCS[name]) for name in names],
                wait_seconds=UPLOAD_WAIT_SECONDS,
            )
            statuses = sorted({change.status for change in mutation.files})
            digests_idle = await _background_idle(services, conversation)
            warmup: list[str | None] = []
            for question in QUESTIONS:  # a first turn (cache miss), then one cache hit
                answer = await orchestrator.ask(
                    TurnRequest(question=question, conversation_id=conversation, blob_names=names)
                )
                warmup.append(answer.metadata.cache)
            turns: list[list[Call]] = []
            walls: list[float] = []
            caches: list[str | None] = []
            for index in range(repeats):
                log.reset()
                started = time.perf_counter()
                answer = await orchestrator.ask(
                    TurnRequest(question=f"{QUESTIONS[0]} ({index})", conversation_id=conversation, blob_names=names)
                )
                walls.append((time.perf_counter() - started) * 1000)
                turns.append(list(log.calls))
                caches.append(answer.metadata.cache)
            row = _row(variant, count, turns, walls, caches, warmup, statuses)
            row["waited_for_digests"] = digests_idle
            rows.append(row)
    return rows


async def _background_idle(services: Any, conversation: str) -> bool | None:
    """Wait (bounded) for the background digests that later commits start after an upload; ``None`` if absent.

    So that only the turn's own calls are counted (as ``tests/test_storage_round_trips.py`` does); looked up by
    name because the commits measured so far may not have them.
    """
    context = getattr(services, "context_files", None)
    wait_idle = getattr(getattr(context, "digests", None), "wait_idle", None)
    if wait_idle is None:
        return None
    return bool(await wait_idle(LOCAL_PRINCIPAL, conversation, UPLOAD_WAIT_SECONDS))


def _row(
    variant: str,
    documents: int,
    turns: list[list[Call]],
    walls: list[float],
    caches: Sequence[str | None],
    warmup: Sequence[str | None],
    upload_statuses: Sequence[str],
) -> dict[str, Any]:
    # The same calls every turn, in any order: a turn that may pause writes its last checkpoint while it is
    # stored, so the order of its last calls is the race's. A stable sort by name lines the turns' calls up.
    by_name = [sorted(calls, key=lambda call: call.name) for calls in turns]
    same = len({tuple(call.name for call in calls) for calls in by_name}) == 1
    first = [call.name for call in turns[0]]
    # Per call (the same call every turn), listed in the first turn's order; or the first turn's calls alone.
    if same:
        sorted_at = sorted(range(len(first)), key=lambda index: turns[0][index].name)
        positions = [[calls[sorted_at.index(index)] for calls in by_name] for index in range(len(first))]
    else:
        positions = [[call] for call in turns[0]]
    per_call = [
        {
            "call": samples[0].name,
            "p50_ms": round(statistics.median(c.wall_ms for c in samples), 3),
            "cpu_p50_ms": round(statistics.median(c.cpu_ms for c in samples), 3),
        }
        for samples in positions
    ]
    storage_ms = [sum(call.wall_ms for call in calls) for calls in turns]
    storage_cpu_ms = [sum(call.cpu_ms for call in calls) for calls in turns]
    return {
        "variant": variant,
        "documents": documents,
        "turns": len(turns),
        "round_trips": max(len(calls) for calls in turns),
        "calls": first,
        "same_calls_every_turn": same,
        "per_call": per_call,
        "storage_ms_p50": round(statistics.median(storage_ms), 3),
        "storage_cpu_ms_p50": round(statistics.median(storage_cpu_ms), 3),
        "turn_ms_p50": round(statistics.median(walls), 3),
        "storage_share": round(statistics.median(storage_ms) / statistics.median(walls), 3),
        "cache": sorted({str(cache) for cache in caches}),
        "cache_hits": f"{sum(cache == 'hit' for cache in caches)}/{len(caches)}",
        "warmup_cache": list(warmup),
        "upload_status": list(upload_statuses),
    }


async def measure_memory(repeats: int) -> list[dict[str, Any]]:
    """The scenario over memory stores (counts; the times are in-process dictionaries)."""
    with temporary_home() as home:
        stores, log = recording_stores(MemoryCollectionProvider(), MemoryBlobStore())
        return await _scenario("memory stores", bench_settings(home, storage="azure"), stores, log, repeats)


@contextlib.contextmanager
def _emulators(workdir: Path) -> Iterator[tuple[Any, Any]]:
    """Azurite (blob) and cosmosdb-server on free loopback ports, via ``tests/emulators.py``'s ``run_emulator``.

    Raises :class:`EmulatorsUnavailable` with the reason when they are missing or do not start.
    """
    try:
        import pytest

        from tests.emulators import (
            AZURITE_ACCOUNT,
            AZURITE_KEY,
            COSMOS_EMULATOR_KEY,
            EMULATOR_BIN,
            AzuriteBlob,
            CosmosEmulator,
            azurite_command,
            cosmos_command,
            run_emulator,
        )
    except ImportError as exc:
        raise EmulatorsUnavailable(f"tests/emulators.py cannot be imported here ({exc})") from exc
    missing = [name for name in ("azurite-blob", "cosmosdb-server") if not (EMULATOR_BIN / name).exists()]
    if missing:
        raise EmulatorsUnavailable(f"not installed: {', '.join(missing)} in {EMULATOR_BIN} (run `make emulators`)")

    outcomes = (pytest.skip.Exception, pytest.fail.Exception)  # how run_emulator reports "did not start"
    try:
        with (
            run_emulator("azurite-blob", azurite_command(workdir / "azurite"), tls=False, log_dir=workdir) as blob_port,
            run_emulator("cosmosdb-server", cosmos_command, tls=True, log_dir=workdir) as cosmos_port,
        ):
            yield (
                AzuriteBlob(f"http://127.0.0.1:{blob_port}/{AZURITE_ACCOUNT}", AZURITE_ACCOUNT, AZURITE_KEY),
                CosmosEmulator(f"https://127.0.0.1:{cosmos_port}", COSMOS_EMULATOR_KEY),
            )
    except outcomes as exc:
        raise EmulatorsUnavailable(str(exc)[:500]) from None


class EmulatorsUnavailable(Exception):
    """The emulators are not installed or did not start; the emulator variant is skipped."""


async def measure_emulators(repeats: int) -> list[dict[str, Any]]:
    """The scenario over the product's Azure stores on Cosmos DB (cosmosdb-server) and Blob Storage (Azurite)."""
    with temporary_home() as home:
        workdir = home.parent / "emulators"
        workdir.mkdir(parents=True)
        with _emulators(workdir) as (azurite, cosmos):
            suffix = uuid.uuid4().hex[:12]
            settings = bench_settings(
                home,
                storage="azure",
                cosmos_endpoint=cosmos.endpoint,
                cosmos_key=cosmos.key,
                cosmos_database=f"orc-bench-{suffix}",
                blob_connection_string=azurite.connection_string,
                blob_container=f"orc-bench-{suffix}",
            )
            settings.check()
            collections, blobs = azure_stores(settings)  # the production clients, one each
            try:
                stores, log = recording_stores(collections, blobs)
                return await _scenario("Cosmos + Blob emulators", settings, stores, log, repeats)
            finally:
                await collections.aclose()
                await blobs.aclose()


async def run(repeats: int = 10, emulators: bool = True) -> BenchResult:
    """Record the storage calls of warm turns on memory stores and, when available, on the emulators."""
    result = BenchResult(name="storage_round_trips")
    result.rows.extend(await measure_memory(repeats))
    if emulators:
        try:
            result.rows.extend(await measure_emulators(repeats))
        except EmulatorsUnavailable as exc:
            result.details["emulators_skipped"] = str(exc)
    else:
        result.details["emulators_skipped"] = "not requested (--no-emulators)"
    for row in result.rows:
        where = f"{row['variant']}, {row['documents']} document{'s' if row['documents'] > 1 else ''}"
        result.checks.append(
            Check(f"warm document_chat turn storage round trips, {where}", row["round_trips"], ROUND_TRIP_LIMIT, "")
        )
        misses = len([cache for cache in row["cache"] if cache != "hit"])
        if misses or not row["same_calls_every_turn"]:
            result.details.setdefault("anomalies", []).append(
                {"row": where, "cache": row["cache"], "same_calls_every_turn": row["same_calls_every_turn"]}
            )
    return result
