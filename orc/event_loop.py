"""Running orc's coroutines from synchronous code: on uvloop where it is installed, else on asyncio's loop.

A turn is dozens of small steps through LangGraph, LangChain and the MCP session, so the event loop's own cost
shows, and uvloop's is smaller (figures in ``bench/README.md``). uvicorn
picks it by itself for ``orc serve``; this does the same for the CLI and the stdio MCP server. Code that embeds
orc in its own asyncio application keeps whatever loop it runs; :func:`loop_factory` is there to choose the
same one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

T = TypeVar("T")

LoopName = Literal["uvloop", "asyncio"]


def loop_factory(name: LoopName | None = None) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory of ``name``'s loop; by default uvloop's when it is importable, else ``None`` (asyncio's)."""
    if name == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if name == "uvloop":
            raise
        return None
    return uvloop.new_event_loop


def loop_name(factory: Callable[[], asyncio.AbstractEventLoop] | None) -> LoopName:
    """Which loop a :func:`loop_factory` result makes."""
    return "asyncio" if factory is None else "uvloop"


def run(main: Coroutine[Any, Any, T], *, loop: LoopName | None = None) -> T:
    """``asyncio.run(main)`` on the loop :func:`loop_factory` chooses."""
    with asyncio.Runner(loop_factory=loop_factory(loop)) as runner:
        return runner.run(main)
