"""Benchmarks with their recorded results: a turn's overhead, model calls, concurrency and storage round trips
(``python -m bench``), documents (``bench.documents_*``) and digests (``bench.digests``).

They measure and report; they are not timed tests and never fail the test suite. See ``bench/README.md``.
"""
