"""``python -m bench.cli_startup``: how long the commands that run no turn take, as a new process each time, and
how long ``orc chat`` takes to show its prompt on a terminal.

The CLI parses its arguments before importing what a command needs (orc/cli/__init__.py), so ``--help`` and a
usage error load no LangGraph, MCP, model client or storage backend, and a read-only command on a fresh
``ORC_HOME`` answers without opening anything. ``sessions list`` and ``docs list`` also run against a home with
one conversation and one file: those open the stores and the services over them
(``orc.composition.foundation``), not the model, graph or MCP server a turn needs (``orc.composition``). Prints
the median and worst wall time of ``--runs`` fresh interpreters per command, and the same for importing each of
the two for comparison.
"""

from __future__ import annotations

import argparse
import os
import pty
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_MAIN = "from orc.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
COMMANDS = {
    "orc --help": ("fresh", _MAIN.format(argv=["--help"])),
    "orc docs lsit (usage error)": ("fresh", _MAIN.format(argv=["docs", "lsit"])),
    "orc sessions list (fresh home)": ("fresh", _MAIN.format(argv=["sessions", "list"])),
    "orc docs list (fresh home)": ("fresh", _MAIN.format(argv=["docs", "list"])),
    "orc sessions list (1 conversation)": ("used", _MAIN.format(argv=["sessions", "list"])),
    "orc docs list (1 file)": ("used", _MAIN.format(argv=["docs", "list"])),
    "python -c pass (interpreter alone)": ("fresh", "pass"),
    "import orc.composition.foundation (a listing's layers)": ("fresh", "import orc.composition.foundation"),
    "import orc.composition (a turn's layers)": ("fresh", "import orc.composition"),
}
PROMPT_READY = b"\x1b[?2004h"
"""prompt-toolkit turns bracketed paste on when it shows the prompt."""


def measure(code: str, runs: int, home: Path) -> list[float]:
    """Wall milliseconds of ``runs`` fresh interpreters running ``code`` with ``ORC_HOME=home``."""
    times = []
    env = {**os.environ, "ORC_HOME": str(home), "ORC_MODEL": "offline"}
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
        times.append((time.perf_counter() - started) * 1000)
    return times


def chat_prompt(runs: int, home: Path) -> list[float]:
    """Milliseconds from starting ``orc chat`` on a pseudo-terminal to its prompt (then Ctrl-D ends it)."""
    times = []
    env = {**os.environ, "ORC_HOME": str(home), "ORC_MODEL": "offline", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
    for _ in range(runs):
        main, child = pty.openpty()
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-c", _MAIN.format(argv=["chat"])], stdin=child, stdout=child, stderr=child, env=env
        )
        os.close(child)
        seen = b""
        while PROMPT_READY not in seen:
            if select.select([main], [], [], 60)[0]:
                seen += os.read(main, 4096)
        times.append((time.perf_counter() - started) * 1000)
        os.write(main, b"\x04")
        process.wait(timeout=60)
        os.close(main)
    return times


def used_home(folder: Path) -> Path:
    """An ORC_HOME with one conversation that has one file."""
    home = folder / "used"
    lease = folder / "lease.txt"
    lease.write_text("The monthly rent is 1,450 euros.\n")
    code = _MAIN.format(argv=["ask", "What is the rent?", "--file", str(lease), "--conversation", "c1"])
    subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, env={**os.environ, "ORC_HOME": str(home)}
    )
    return home


def main() -> None:
    """Run and print the table."""
    parser = argparse.ArgumentParser(prog="python -m bench.cli_startup")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    print(f"{'command':<46} {'median ms':>10} {'max ms':>8}")
    with tempfile.TemporaryDirectory() as scratch:
        homes = {"fresh": Path(scratch) / "fresh", "used": used_home(Path(scratch))}
        for name, (home, code) in COMMANDS.items():
            times = measure(code, args.runs, homes[home])
            print(f"{name:<46} {statistics.median(times):>10.0f} {max(times):>8.0f}")
        times = chat_prompt(args.runs, homes["used"])
        print(f"{'orc chat: prompt shown':<46} {statistics.median(times):>10.0f} {max(times):>8.0f}")


if __name__ == "__main__":
    main()
