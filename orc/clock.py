"""Wall-clock timestamps in one format (UTC, ISO 8601), so stored records sort and compare as strings."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """The current UTC time as an ISO 8601 string with microseconds and a ``Z``-equivalent offset."""
    return datetime.now(UTC).isoformat(timespec="microseconds")
