"""Server CPU per warm turn over HTTP, two source trees side by side in one run (no target of its own).

A single ``turn_overhead`` run reads the server's CPU over one stretch of time, and this host's speed drifts
within seconds; two trees compared in alternating blocks meet the same drifts::

    python -m bench.server_cpu_ab /tmp/orc-before /tmp/orc-after [--blocks 12] [--turns 100]

Each tree (a ``git archive`` of a commit, with a ``bench/`` folder) serves its own ``bench.server`` process
(embedded storage, the scripted zero-latency model) with the three sample documents attached to one
conversation; after 5 warm-up turns, blocks of ``turns`` warm turns go to each server in turn, the order
alternating, and each block's server CPU (``/proc``) over its turns is one sample. Prints each tree's median,
minimum and samples.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
from pathlib import Path

from bench.common import (
    SAMPLE_NAMES,
    ServerOptions,
    loopback_client,
    post_turn,
    process_tree_cpu_seconds,
    serve_in_subprocess,
    temporary_home,
    turn_body,
    upload_http,
)

CONVERSATION = "bench-ab"
WARMUP_TURNS = 5


async def compare(trees: list[Path], blocks: int, turns: int) -> dict[Path, list[float]]:
    """Server CPU ms per turn of each block, per tree."""
    samples: dict[Path, list[float]] = {tree: [] for tree in trees}
    async with contextlib.AsyncExitStack() as stack:
        servers = []
        for tree in trees:
            home = stack.enter_context(temporary_home())
            server = await stack.enter_async_context(
                serve_in_subprocess(home / "home", ServerOptions(storage="embedded"), repo=tree)
            )
            client = await stack.enter_async_context(loopback_client(server.base_url, connections=1))
            await upload_http(client, CONVERSATION, SAMPLE_NAMES)
            for _ in range(WARMUP_TURNS):
                await post_turn(client, turn_body(CONVERSATION, SAMPLE_NAMES))
            servers.append((tree, server.pid, client))
        for block in range(blocks):
            for tree, pid, client in servers if block % 2 == 0 else servers[::-1]:
                before = process_tree_cpu_seconds(pid)
                for _ in range(turns):
                    await post_turn(client, turn_body(CONVERSATION, SAMPLE_NAMES))
                samples[tree].append((process_tree_cpu_seconds(pid) - before) * 1000 / turns)
    return samples


def main() -> None:
    """Parse the arguments, run the comparison, print each tree's figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs=2, type=Path, help="two source trees, each with orc/ and bench/")
    parser.add_argument("--blocks", type=int, default=12, help="blocks of turns per tree (12)")
    parser.add_argument("--turns", type=int, default=100, help="warm turns per block (100)")
    args = parser.parse_args()
    samples = asyncio.run(compare([tree.resolve() for tree in args.trees], args.blocks, args.turns))
    for tree, values in samples.items():
        print(
            f"{tree}: server CPU per warm turn, median {statistics.median(values):.2f} ms, min {min(values):.2f} ms, "
            f"blocks {[round(value, 2) for value in values]}"
        )


if __name__ == "__main__":
    main()
