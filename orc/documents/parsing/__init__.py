"""Parsing: a file's bytes to its text — the extractors, the worker pool that runs them with a memory cap and a
deadline, the bounds on what one document may cost, and the slots shared fairly across organizations."""
