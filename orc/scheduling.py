"""Yield points between a turn's graph nodes, where a flooding caller's turns give way to everyone else's.

Why: a per-principal cap (``ORC_MAX_CONCURRENT_TURNS``) bounds how many turns one caller runs at once, not how much
of the event loop those turns take. With turns that need CPU (the offline model, large sources), a caller hammering
the server kept its four admitted turns running next to everyone else's, and another tenant's turns slowed by as
much. So each graph node is a yield point: before it runs, the turn asks its :class:`TurnGate` (the caller's turn
slot, see :mod:`orc.quotas`), which makes the turns of a caller who is being refused wait while other callers' turns
run, for a bounded time. Everyone else's turns pass straight through, and a turn without a gate (no limits
configured, the CLI, an embedder calling the orchestrator) never waits.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar
from typing import Any, ParamSpec, Protocol, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

__all__ = ["TurnGate", "enter", "scheduled"]


class TurnGate(Protocol):
    """What a running turn asks at each of its yield points."""

    def yielding(self) -> bool:
        """Whether this turn must give way before its next step (cheap: asked before every node)."""
        ...

    def step(self) -> AbstractAsyncContextManager[None]:
        """Wait for this turn's turn, and hold it while the step runs."""
        ...


_gate: ContextVar[TurnGate | None] = ContextVar("orc_turn_gate", default=None)


def enter(gate: TurnGate) -> None:
    """Make ``gate`` the current turn's gate, for this task and every task it starts from now on.

    A gate outliving its turn (a stream's task keeps the context) must answer ``yielding() is False``.
    """
    _gate.set(gate)


def scheduled(function: Callable[P, T]) -> Callable[P, T]:
    """``function``, an async graph node, behind a yield point; synchronous functions are returned as they are."""
    if not inspect.iscoroutinefunction(function):
        return function

    @functools.wraps(function)
    async def node(*args: P.args, **kwargs: P.kwargs) -> Any:
        gate = _gate.get()
        if gate is None or not gate.yielding():
            return await function(*args, **kwargs)
        async with gate.step():
            return await function(*args, **kwargs)

    return node  # type: ignore[return-value]
