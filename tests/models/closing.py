"""Models built by a test close what they hold open (their HTTP connection pools) when the test ends.

A module that builds models imports :func:`clients_closed_after_each_test` (an autouse fixture) and passes
:func:`resources` to the factory: a connection left open would surface as a ResourceWarning in whichever later test
the garbage collector happened to run in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest

_STACKS: list[AsyncExitStack] = []


@pytest.fixture(autouse=True)
async def clients_closed_after_each_test() -> AsyncIterator[None]:
    """Close, when the test ends, what the models it built hold open."""
    async with AsyncExitStack() as stack:
        _STACKS.append(stack)
        try:
            yield
        finally:
            _STACKS.remove(stack)


def resources() -> AsyncExitStack:
    """The running test's stack, for the factories' ``resources``."""
    return _STACKS[-1]
