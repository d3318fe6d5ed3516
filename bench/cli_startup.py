"""``python -m bench.cli_startup``: how long ``orc --help`` and a mistyped command take, as a new process each time.

The CLI parses its arguments before importing what a command needs (orc/cli/__init__.py), so neither should
load LangGraph, MCP, the model clients or the storage backends. Prints the median and worst wall time of
``--runs`` fresh interpreters per command, and the same for ``import orc.composition`` (what every real
command pays) for comparison.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

_MAIN = "from orc.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
COMMANDS = {
    "orc --help": _MAIN.format(argv=["--help"]),
    "orc docs lsit (usage error)": _MAIN.format(argv=["docs", "lsit"]),
    "python -c pass (interpreter alone)": "pass",
    "import orc.composition (every real command)": "import orc.composition",
}


def measure(code: str, runs: int) -> list[float]:
    """Wall milliseconds of ``runs`` fresh interpreters running ``code``."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        times.append((time.perf_counter() - started) * 1000)
    return times


def main() -> None:
    """Run and print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench.cli_startup")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    print(f"{'command':<46} {'median ms':>10} {'max ms':>8}")
    for name, code in COMMANDS.items():
        times = measure(code, args.runs)
        print(f"{name:<46} {statistics.median(times):>10.0f} {max(times):>8.0f}")


if __name__ == "__main__":
    main()
