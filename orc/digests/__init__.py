"""Context digests (context-digest-spec): per-file (Task A) and aggregate (Task B), incremental and validated."""
