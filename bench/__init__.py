"""Benchmarks for orc's turn: orchestration overhead, model calls per turn and concurrency (``python -m bench``).

They measure and report; they are not timed tests and never fail the test suite. See ``bench/README.md``.
"""
