"""The CLI and the stdio MCP server run on uvloop where it is installed, and on asyncio's loop on request."""

from __future__ import annotations

import asyncio
import sys

import pytest

from orc import event_loop


async def running_loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


@pytest.mark.skipif(sys.platform == "win32", reason="uvloop has no Windows build")
def test_run_uses_uvloop_where_it_is_installed() -> None:
    assert event_loop.run(running_loop_module()).startswith("uvloop")
    assert event_loop.loop_name(event_loop.loop_factory()) == "uvloop"


def test_run_uses_asyncio_when_asked() -> None:
    assert event_loop.run(running_loop_module(), loop="asyncio").startswith("asyncio")
    assert event_loop.loop_name(event_loop.loop_factory("asyncio")) == "asyncio"
