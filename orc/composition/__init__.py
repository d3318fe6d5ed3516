"""The one composition root: settings in, the process's :class:`Services` out, built in layers that each hold
services only (the raw parts they are built from stay inside this package):

- :mod:`~orc.composition.stores` — the collections, blobs, search engine and job queues;
- :mod:`~orc.composition.foundation` — what is served from the stores without a model (:class:`Foundation`, which
  a command that only reads what is stored opens alone with :func:`open_foundation`);
- :mod:`~orc.composition.documents` — the model, digests, document tools and the MCP server
  (:class:`DocumentServices`, what ``python -m mcp_server`` builds);
- :mod:`~orc.composition.runtime` — the turn service on top (:func:`build_runtime`, :class:`Services`).

Nothing here runs at import time; everything is built inside :func:`build_runtime` and closed when its context
exits. Entry points (HTTP, CLI, MCP transports, ``function_app.py``) take :class:`Services` and use the service
they need.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orc.composition.documents import (
        DocumentServices,
        build_document_services,
        digest_model_for,
        in_memory_mcp,
        model_from_settings,
    )
    from orc.composition.foundation import Foundation, build_foundation, extraction_limits, open_foundation
    from orc.composition.runtime import Services, SharedRuntime, build_orchestrator, build_runtime
    from orc.composition.stores import (
        JobQueues,
        Stores,
        azure_search_engine,
        azure_stores,
        open_azure_search,
        open_stores,
    )

# Loaded on first use: a command that only reads what is stored opens the foundation without importing the model,
# graph and MCP layers above it.
_LAZY = {
    "DocumentServices": "documents",
    "build_document_services": "documents",
    "digest_model_for": "documents",
    "in_memory_mcp": "documents",
    "model_from_settings": "documents",
    "Foundation": "foundation",
    "build_foundation": "foundation",
    "extraction_limits": "foundation",
    "open_foundation": "foundation",
    "Services": "runtime",
    "SharedRuntime": "runtime",
    "build_orchestrator": "runtime",
    "build_runtime": "runtime",
    "JobQueues": "stores",
    "Stores": "stores",
    "azure_stores": "stores",
    "azure_search_engine": "stores",
    "open_azure_search": "stores",
    "open_stores": "stores",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'orc.composition' has no attribute {name!r}")
    return getattr(importlib.import_module(f"orc.composition.{module}"), name)


__all__ = [
    "DocumentServices",
    "Foundation",
    "JobQueues",
    "Services",
    "SharedRuntime",
    "Stores",
    "azure_search_engine",
    "azure_stores",
    "build_document_services",
    "build_foundation",
    "build_orchestrator",
    "build_runtime",
    "digest_model_for",
    "extraction_limits",
    "in_memory_mcp",
    "model_from_settings",
    "open_azure_search",
    "open_foundation",
    "open_stores",
]
