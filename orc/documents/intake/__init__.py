"""Intake: what an upload goes through — the checks before anything is stored, background processing to a
``ready`` document, the leases that let a crashed process's work be finished, and supplied files' text."""
