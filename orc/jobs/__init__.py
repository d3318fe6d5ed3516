"""Queue-driven background work: the job messages and the worker that consumes them (``orc worker``, Functions)."""
