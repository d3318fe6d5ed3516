"""orc: a document-chat agent orchestrator.

    async with build_runtime() as services:
        result = await services.orchestrator.ask(TurnRequest(question="What is the notice period?"))

The public names are imported lazily, so ``import orc.errors`` (or the CLI's ``--help``) does not pull in
LangGraph, MCP and every storage backend.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Orchestrator": "orc.turns",
    "OrcError": "orc.errors",
    "Principal": "orc.principal",
    "Services": "orc.composition",
    "Settings": "orc.settings",
    "TurnRequest": "orc.turns",
    "TurnResult": "orc.turns",
    "build_orchestrator": "orc.composition",
    "build_runtime": "orc.composition",
}

__all__ = [
    "OrcError",
    "Orchestrator",
    "Principal",
    "Services",
    "Settings",
    "TurnRequest",
    "TurnResult",
    "__version__",
    "build_orchestrator",
    "build_runtime",
]

if TYPE_CHECKING:
    from orc.composition import Services, build_orchestrator, build_runtime
    from orc.errors import OrcError
    from orc.principal import Principal
    from orc.settings import Settings
    from orc.turns import Orchestrator, TurnRequest, TurnResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'orc' has no attribute {name!r}")
    return getattr(import_module(module), name)
