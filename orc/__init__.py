"""orc: a document-chat agent orchestrator.

>>> async with build_orchestrator() as orchestrator:
...     result = await orchestrator.ask(TurnRequest(question="What is the notice period?"))
"""

__version__ = "0.1.0"

from orc.composition import build_orchestrator, build_runtime
from orc.errors import OrcError
from orc.orchestrator import Orchestrator
from orc.principal import Principal
from orc.settings import Settings
from orc.turns import TurnRequest, TurnResult

__all__ = [
    "OrcError",
    "Orchestrator",
    "Principal",
    "Settings",
    "TurnRequest",
    "TurnResult",
    "__version__",
    "build_orchestrator",
    "build_runtime",
]
