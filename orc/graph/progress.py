"""Progress, tool and token events written to the LangGraph stream writer (``custom`` stream mode)."""

from __future__ import annotations

from langgraph.config import get_stream_writer

from orc.graph.events import Event, ProgressEvent


def emit(event: Event) -> None:
    """Write one client-facing event; a no-op when the graph is not being streamed."""
    try:
        writer = get_stream_writer()
    except RuntimeError:  # outside a runnable context (direct node calls in unit tests)
        return
    writer(event)


def progress(step: str, message: str, percent: int) -> None:
    """A ``progress`` event: which step, what it does, and roughly how far the turn is."""
    emit(ProgressEvent(type="progress", step=step, message=message, percent=percent))
