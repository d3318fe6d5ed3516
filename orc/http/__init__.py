"""The HTTP adapter: a FastAPI app over the orchestrator (``orc serve``, and Azure Functions via function_app.py)."""

from orc.http.app import create_app

__all__ = ["create_app"]
