"""Span attributes that name URLs, scrubbed before any exporter sees them.

HTTP instrumentation (the Azure Monitor distro instruments FastAPI and the Azure SDK's HTTP calls) records the
request's URL: ``url.path`` held raw conversation and document ids (``/api/sessions/c-123/context/files/doc-9``),
blob URLs held organization, user and file names, and ``url.query`` held file names. :class:`ScrubUrls` rewrites
those attributes (and a span name made of a raw path) when a span starts, and the attributes again when it ends:
a path keeps orc's own route words (``api``, ``sessions``, ``context``…) and every other segment becomes a stable
hash (``h-1f2e3d4c``, so one id still groups its spans); a query keeps its parameter names and loses its values.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

ROUTE_WORDS = frozenset(
    {
        "api", "orc", "sessions", "context", "files", "digest", "digests", "stream", "contexts", "documents",
        "organization", "folder", "usecase", "export", "messages", "feedback", "context-requests", "supply",
        "run-without", "cancel", "mcp", "health", "ui-config", "openapi.json", "me", "docs", "web", "content",
        "summary", "search", "tree", "jobs",
    }
)  # fmt: skip
"""Path segments that are orc's own words, never a caller's data."""

_PATH_KEYS = ("url.path", "http.target")
_NAMED_PATH = re.compile(r"^(?P<method>[A-Z]+ )(?P<path>/[^\s?]*)(?P<query>\?\S*)?(?P<rest>.*)$", re.DOTALL)
_QUERY_KEYS = ("url.query",)
_FULL_KEYS = ("url.full", "http.url")


def scrub_path(path: str) -> str:
    """``/api/sessions/c-123/context`` → ``/api/sessions/h-5d41402a/context``."""
    return "/".join(
        segment if not segment or segment in ROUTE_WORDS else _hashed(segment) for segment in path.split("/")
    )


def scrub_query(query: str) -> str:
    """``blob_names=report.txt&format=pdf`` → ``blob_names=&format=``."""
    return "&".join(f"{quote(name, safe='')}=" for name, _ in parse_qsl(query, keep_blank_values=True))


def scrub_url(url: str) -> str:
    """A full URL with its path scrubbed and its query reduced to parameter names (no user info)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "[url]"
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, scrub_path(parts.path), scrub_query(parts.query), ""))


def _hashed(segment: str) -> str:
    return "h-" + hashlib.sha256(f"orc-url:{segment}".encode()).hexdigest()[:8]


def _scrubbed(attributes: Any) -> dict[str, str]:
    changes: dict[str, str] = {}
    if not attributes:
        return changes
    for key in _PATH_KEYS:
        value = attributes.get(key)
        if isinstance(value, str):
            path, mark, query = value.partition("?")
            changes[key] = scrub_path(path) + (mark + scrub_query(query) if mark else "")
    for key in _QUERY_KEYS:
        value = attributes.get(key)
        if isinstance(value, str):
            changes[key] = scrub_query(value)
    for key in _FULL_KEYS:
        value = attributes.get(key)
        if isinstance(value, str):
            changes[key] = scrub_url(value)
    return {key: value for key, value in changes.items() if attributes.get(key) != value}


class ScrubUrls(SpanProcessor):
    """Rewrites the URL attributes of every span (see the module docstring); install it before the exporters'."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Scrub what the instrumentation set when it started the span, its name included (a server span without
        a route template is named after the raw path: ``GET /api/sessions/c-123``)."""
        changes = _scrubbed(span.attributes)
        if changes:
            span.set_attributes(changes)
        named = _NAMED_PATH.match(span.name)
        if named:
            span.update_name(named.group("method") + scrub_path(named.group("path")) + named.group("rest"))

    def on_end(self, span: ReadableSpan) -> None:
        """Scrub what was set later (an ended span's attributes are read-only for processors, so they are
        replaced in place before the exporters that come after this processor read them)."""
        changes = _scrubbed(span.attributes)
        if changes:
            attributes = getattr(span, "_attributes", None)
            if attributes is not None:
                for key, value in changes.items():
                    attributes._dict[key] = value  # BoundedAttributes is immutable once the span ends
