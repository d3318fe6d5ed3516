"""``python -m bench``: run the benchmarks, print readable tables and write ``bench/results/latest.json``.

Examples::

    python -m bench                                   # all but peer, default iteration counts (< 2 min on 2 cores)
    python -m bench --only turn_overhead --iterations 500
    python -m bench --only concurrency --turns 50 --latency 0.2 --variant process
    python -m bench --only storage_round_trips --no-emulators
    python -m bench --only peer                       # orc side by side with the idiomatic LangGraph build
    python -m bench --quick                           # small counts, a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from bench import concurrency, model_calls, peer, storage_round_trips, turn_overhead
from bench.common import BenchResult, format_checks, format_table, host_speed_ms, machine_info
from bench.server import ENV_LOOP
from orc import event_loop
from orc.testing import forbid_model_requests

DEFAULT_BENCHMARKS = ("turn_overhead", "model_calls", "concurrency", "storage_round_trips")
# The side-by-side comparison takes about 2.5 minutes of its own: it runs when asked for (--only peer).
BENCHMARKS = (*DEFAULT_BENCHMARKS, "peer")
PROFILE_COLUMNS = ["function", "calls_per_turn", "self_ms_per_turn", "cum_ms_per_turn"]
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results" / "latest.json"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument("--only", action="append", choices=BENCHMARKS, help="run only this benchmark (repeatable)")
    parser.add_argument("--quick", action="store_true", help="small iteration counts (a smoke run, not figures)")
    group = parser.add_argument_group("turn_overhead")
    group.add_argument(
        "--iterations",
        type=int,
        default=300,
        help="timed in-process turns per storage (300: a few seconds, longer than the host's speed swings)",
    )
    group.add_argument("--http-iterations", type=int, default=50, help="timed HTTP turns per mode and storage (50)")
    group.add_argument("--breakdown-iterations", type=int, default=30, help="samples per breakdown part; 0 = off")
    group.add_argument("--profile-iterations", type=int, default=30, help="turns under cProfile; 0 = off (30)")
    group = parser.add_argument_group("model_calls")
    group.add_argument("--calls-latency", type=float, default=0.2, help="seconds per call for the critical path")
    group = parser.add_argument_group("concurrency")
    group.add_argument("--turns", type=int, default=100, help="concurrent turns (100)")
    group.add_argument("--latency", type=float, default=0.1, help="seconds per model call (0.1)")
    group.add_argument("--single-runs", type=int, default=5, help="sequential single turns; the median is 'one turn'")
    group.add_argument(
        "--bursts", type=int, default=3, help="bursts of --turns concurrent turns per row; the median is reported (3)"
    )
    group.add_argument(
        "--storage", action="append", choices=("embedded", "memory"), help="storages for concurrency (both)"
    )
    group.add_argument(
        "--variant",
        action="append",
        choices=concurrency.ALL_VARIANTS,
        help="server set-ups for concurrency: process (1 worker), workers2, workers2-stock, inproc "
        "(default: all but workers2-stock)",
    )
    group.add_argument("--profile-concurrency", action="store_true", help="one more run under cProfile (off)")
    group.add_argument(
        "--client",
        choices=("aiohttp", "httpx"),
        default="aiohttp",
        help="HTTP client posting the timed turns (aiohttp: less CPU on the cores the server shares)",
    )
    group = parser.add_argument_group("storage_round_trips")
    group.add_argument("--round-trip-repeats", type=int, default=10, help="recorded warm turns per row (10)")
    group.add_argument("--no-emulators", action="store_true", help="memory stores only (skip Cosmos/Azurite)")
    group = parser.add_argument_group("peer")
    group.add_argument(
        "--peer-rounds",
        type=int,
        nargs=2,
        default=(10, 4),
        metavar=("FAST", "SLOW"),
        help="interleaved rounds at 0 ms and at --peer-latency per model call (10 4)",
    )
    group.add_argument("--peer-latency", type=float, default=0.5, help="seconds per model call of the slow half (0.5)")
    group.add_argument(
        "--peer-turns", type=int, default=100, help="concurrent turns of each build's burst, at --peer-latency (100)"
    )
    group.add_argument(
        "--peer-bursts", type=int, default=3, help="bursts per build, interleaved; each build's median is kept (3)"
    )
    group.add_argument(
        "--peer-conversation-turns", type=int, default=50, help="turns of the input-token conversation (50)"
    )
    parser.add_argument(
        "--loop",
        choices=("uvloop", "asyncio"),
        help="event loop of the bench process and its servers (default: uvloop where installed, as orc's CLI and "
        "uvicorn choose)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="bound on each benchmark, seconds (300)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help=f"JSON results ({DEFAULT_OUTPUT.name})")
    parser.add_argument("--label", default="", help="free text stored with the results (e.g. what was measured)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations, args.http_iterations = 10, 5
        args.breakdown_iterations, args.profile_iterations = 5, 5
        args.turns, args.single_runs, args.bursts = 10, 2, 1
        args.round_trip_repeats = 3
        args.peer_rounds, args.peer_turns, args.peer_bursts, args.peer_conversation_turns = (2, 1), 10, 1, 20
    return args


def _jobs(args: argparse.Namespace) -> dict[str, Callable[[], Awaitable[BenchResult]]]:
    storages = tuple(args.storage) if args.storage else ("embedded", "memory")
    return {
        "turn_overhead": lambda: turn_overhead.run(
            iterations=args.iterations,
            http_iterations=args.http_iterations,
            profile_iterations=args.profile_iterations,
            breakdown_iterations=args.breakdown_iterations,
        ),
        "model_calls": lambda: model_calls.run(latency=args.calls_latency),
        "concurrency": lambda: concurrency.run(
            turns=args.turns,
            latency=args.latency,
            single_runs=args.single_runs,
            limit_s=min(args.timeout, 120.0),
            storages=storages,
            variants=tuple(args.variant) if args.variant else concurrency.VARIANTS,
            profile=args.profile_concurrency,
            http_client=args.client,
            bursts=args.bursts,
        ),
        "storage_round_trips": lambda: storage_round_trips.run(
            repeats=args.round_trip_repeats, emulators=not args.no_emulators
        ),
        "peer": lambda: peer.run(
            latencies=(0.0, args.peer_latency),
            rounds=tuple(args.peer_rounds),
            turns=args.peer_turns,
            bursts=args.peer_bursts,
            conversation_turns=args.peer_conversation_turns,
            limit_s=min(args.timeout, 120.0),
        ),
    }


def peer_report(result: BenchResult) -> str:
    """The side-by-side tables: latencies, ratios and bursts; then model calls and input tokens per turn."""
    columns = ["model_ms", "measure", *peer.BUILDS, peer.FLOOR, "orc/per-call", "orc/session"]
    lines = [format_table(result.rows, columns)]
    lines.append(
        "(ms are medians of the interleaved rounds; a burst's wall time is the median of the build's interleaved"
        " bursts, and 'burst / one turn' is that over the median single first turn of the same build (the bursts run"
        " at the larger model latency only); ratios are orc over each peer variant)"
    )
    lines.append(f"\none conversation, input tokens per turn ({result.details['token_estimate']}):")
    columns = ["turn", "orc_input_tokens", "peer_input_tokens", "orc/peer", "orc_model_calls", "peer_model_calls"]
    lines.append(format_table(result.details["token_rows"], columns))
    return "\n".join(lines)


def report(result: BenchResult) -> str:
    """The readable form of one benchmark's result."""
    lines = [f"== {result.name} =="]
    if result.name == "turn_overhead":
        columns = ["mode", "storage", "n", "p50", "p90", "p99", "mean", "min", "max", "cpu_ms", "client_cpu_ms"]
        lines.append(format_table(result.rows, [*columns, "cache_hits"]))
        lines.append(
            "(milliseconds per turn; cpu_ms = the serving process's CPU time per turn, all threads: the bench process"
            " for inproc/asgi/http-same-loop (client included), the server process for http-process)"
        )
        breakdown = result.details.get("breakdown")
        if breakdown:
            lines.append(
                "\nwhere a warm in-process turn (embedded) goes, p50 ms, measured separately without a profiler:"
            )
            lines.extend(f"  {key}: {value}" for key, value in breakdown.items())
        profile = result.details.get("profile")
        if profile:
            lines.append(
                f"\ncProfile: {profile['iterations']} turns, {profile['profiled_wall_ms_per_turn']} ms/turn under the "
                "profiler; self time by package (ms/turn):"
            )
            lines.append(format_table(profile["by_package"][:10], ["package", "self_ms_per_turn", "share"]))
            lines.append("top functions by self time (ms/turn):")
            lines.append(format_table(profile["top_self"][:12], PROFILE_COLUMNS))
            lines.append("calls per turn of former per-turn costs (0 = gone):")
            lines.extend(f"  {key}: {value}" for key, value in profile["former_costs_calls_per_turn"].items())
    elif result.name == "model_calls":
        columns = ["turn", "metadata_model_calls", "scripted_model_calls", "critical_path_calls", "planning_calls"]
        lines.append(format_table(result.rows, [*columns, "cache", "limit", "wall_ms", "wall_ms_with_latency"]))
    elif result.name == "storage_round_trips":
        columns = ["variant", "documents", "turns", "round_trips", "storage_ms_p50", "storage_cpu_ms_p50"]
        lines.append(format_table(result.rows, [*columns, "turn_ms_p50", "storage_share", "cache_hits"]))
        lines.append("calls of one warm turn, p50 wall ms (client CPU ms) per call:")
        for row in result.rows:
            calls = ", ".join(f"{c['call']} {c['p50_ms']:.2f} ({c['cpu_p50_ms']:.2f})" for c in row["per_call"])
            lines.append(f"  {row['variant']}, {row['documents']} doc(s): {calls}")
        skipped = result.details.get("emulators_skipped")
        if skipped:
            lines.append(f"emulator variant skipped: {skipped}")
        if result.details.get("anomalies"):
            lines.append(f"anomalies: {result.details['anomalies']}")
    elif result.name == "peer":
        lines.append(peer_report(result))
    else:
        columns = ["storage", "variant", "turns", "one_turn_ms", "total_ms", "ratio", "burst_ratios", "ok", "errors"]
        cpu = ["server_cpu_ms_per_turn", "client_cpu_ms_per_turn", "cpu_bound_ms", "ratio_beyond_cpu", "turn_p50_ms"]
        lines.append(format_table(result.rows, [*columns, *cpu]))
        lines.append(
            "(the median of each row's bursts, all of whose ratios are listed; server CPU: the server process and"
            " its workers; in-process: the bench process, client included;"
            " cpu_bound_ms: server + client CPU of the run over the machine's cores, the least wall time it could"
            " take; ratio_beyond_cpu: the wall time left over, in turns)"
        )
        for key in ("failures", "retried_or_failed"):
            if result.details.get(key):
                lines.append(f"{key}: {result.details[key]}")
        profile = result.details.get("profile")
        if profile:
            lines.append(
                f"\ncProfile of the server process over {result.details['profiled_run']['turns']} concurrent turns "
                f"(embedded, event-loop thread): {profile['profiled_cpu_ms_per_turn']} ms/turn; self time by package:"
            )
            lines.append(format_table(profile["by_package"][:10], ["package", "self_ms_per_turn", "share"]))
            lines.append("top functions by self time (ms/turn; epoll.poll is the loop waiting, e.g. on the model):")
            lines.append(format_table(profile["top_self"][:15], PROFILE_COLUMNS))
    if result.checks:
        lines.append("\ntargets:")
        lines.append(format_checks(result.checks))
    return "\n".join(lines)


async def _run_all(args: argparse.Namespace) -> dict[str, Any]:
    jobs = _jobs(args)
    selected = args.only or list(DEFAULT_BENCHMARKS)
    output: dict[str, Any] = {"machine": machine_info(), "arguments": vars(args) | {"output": str(args.output)}}
    output["benchmarks"] = {}
    for name in selected:
        speed_before = host_speed_ms()
        started = time.perf_counter()
        print(f"running {name} ...", file=sys.stderr, flush=True)
        result = await asyncio.wait_for(jobs[name](), args.timeout)
        elapsed = round(time.perf_counter() - started, 1)
        speed_after = host_speed_ms()
        print(
            report(result) + f"\n({name}: {elapsed} s; host speed probe {speed_before} ms before, "
            f"{speed_after} ms after: lower is faster, see bench/README.md)\n",
            flush=True,
        )
        output["benchmarks"][name] = result.as_dict() | {
            "elapsed_s": elapsed,
            "host_speed_probe_ms": {"before": speed_before, "after": speed_after},
        }
    output["machine"]["loadavg_after"] = machine_info()["loadavg_1_5_15"]
    return output


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected benchmarks; return the exit status (1 with ``--strict`` when a target is missed)."""
    args = parse_args(argv)
    started = time.perf_counter()
    loop = event_loop.loop_name(event_loop.loop_factory(args.loop))
    os.environ[ENV_LOOP] = loop  # server processes run on the same loop
    with forbid_model_requests():  # the benchmarks use scripted models only; never a real endpoint
        output = event_loop.run(_run_all(args), loop=loop)
    output["event_loop"] = loop
    output["total_s"] = round(time.perf_counter() - started, 1)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(output, indent=2, default=str) + "\n")
    checks = [check for bench in output["benchmarks"].values() for check in bench["checks"]]
    failed = [check for check in checks if not check["passed"]]
    machine = output["machine"]
    print(
        f"{len(checks) - len(failed)}/{len(checks)} targets met; total {output['total_s']} s on "
        f"{machine['nproc']} × {machine['cpu']}, Python {machine['python']} on {loop}, {machine['date_utc']} "
        f"(load {machine['loadavg_1_5_15']}); results in {args.output}"
    )
    return 1 if failed and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
