"""The HTTP adapter: a FastAPI app over the orchestrator (``orc serve``, and Azure Functions via function_app.py).

``create_app`` is imported on first use: a worker process of ``orc serve --workers N`` imports this package to
unpickle its server options (the connection protocol of :mod:`orc.http.connection_limits`) before it can answer
its supervisor's health checks, and the whole app's imports took longer than the supervisor waits on a busy
machine, so every worker was killed as hung and started again, for ever.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orc.http.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from orc.http.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
