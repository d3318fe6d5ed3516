"""``python -m bench.make_demo``: ``make demo`` on a fresh clone with cold package caches, then once more.

The two-minute start of issue 39: a new user clones the repository and runs ``make demo``. This clones the
repository's ``HEAD`` into a temporary folder and runs ``make demo`` there with empty pip and uv caches
(``PIP_CACHE_DIR`` and ``UV_CACHE_DIR`` pointed at new folders, so every package is downloaded), timing each step
by the moment make prints its command. Then it runs ``make demo`` again in the same clone (installed, warm caches)
and reads the ``demo`` conversation's message count after each run: a second run must leave it as the first did.
Writes ``bench/results/make_demo.json``. Needs the package registries (PyPI) and takes a minute or two.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import machine_info

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "make_demo.json"
STEPS = (
    ("venv", re.compile(r"-m venv ")),
    ("uv", re.compile(r"pip install .*uv==")),
    ("install orc", re.compile(r"uv pip install ")),
    ("orc demo", re.compile(r"orc demo$")),
)
"""make's command lines, in order, and the step each starts."""


def timed_make(clone: Path, env: dict[str, str]) -> tuple[float, dict[str, float]]:
    """Run ``make demo`` in ``clone``: total seconds and seconds per step."""
    started = time.perf_counter()
    marks: list[tuple[str, float]] = []
    lines: list[str] = []
    process = subprocess.Popen(
        ["make", "demo"], cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        step = next((name for name, pattern in STEPS if pattern.search(line.rstrip())), None)
        if step is not None:
            marks.append((step, time.perf_counter() - started))
    if process.wait() != 0:
        raise SystemExit(f"make demo failed:\n{''.join(lines[-40:])}")
    total = time.perf_counter() - started
    ends = [at for _, at in marks[1:]] + [total]
    steps = {name: round(end - at, 1) for (name, at), end in zip(marks, ends, strict=True)}
    return round(total, 1), steps


def demo_messages(clone: Path, env: dict[str, str]) -> int:
    """The ``demo`` conversation's message count, as ``orc sessions list`` shows it."""
    listed = subprocess.run(
        [str(clone / ".venv" / "bin" / "orc"), "sessions", "list"],
        cwd=clone,
        env={**env, "ORC_HOME": str(clone / ".orc")},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    row = next(line.split() for line in listed.splitlines() if " demo " in line)
    return int(row[row.index("demo") - 1])


def main(argv: list[str] | None = None) -> int:
    """Clone, run cold, run again, report."""
    parser = argparse.ArgumentParser(prog="python -m bench.make_demo", description=__doc__.split("\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the clone and the caches (their folder is printed)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="orc-make-demo-"))
    clone = folder / "orc"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("VIRTUAL_ENV", "ORC_", "UV_")) and key != "PIP_CACHE_DIR"
    }
    env |= {"PIP_CACHE_DIR": str(folder / "pip-cache"), "UV_CACHE_DIR": str(folder / "uv-cache")}
    load_before = os.getloadavg()
    cold, cold_steps = timed_make(clone, env)
    cold_messages = demo_messages(clone, env)
    warm, warm_steps = timed_make(clone, env)
    warm_messages = demo_messages(clone, env)
    result = {
        "benchmark": "make_demo",
        "machine": machine_info(),
        "load_before": [round(value, 2) for value in load_before],
        "load_after": [round(value, 2) for value in os.getloadavg()],
        "cold_seconds": cold,
        "cold_steps": cold_steps,
        "warm_seconds": warm,
        "warm_steps": warm_steps,
        "demo_messages_after_each_run": [cold_messages, warm_messages],
        "target_cold_seconds": 45,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"make demo, fresh clone, cold caches: {cold} s  {cold_steps}")
    print(f"make demo again:                     {warm} s  {warm_steps}")
    print(f"demo conversation's messages after each run: {cold_messages}, {warm_messages}")
    print(f"load average before / after: {result['load_before']} / {result['load_after']}")
    if args.keep:
        print(f"kept {folder}", file=sys.stderr)
    else:
        shutil.rmtree(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
