"""The public API is what ``orc.__all__`` says, and importing orc builds nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orc


def test_all_names_the_public_api_and_each_resolves() -> None:
    assert set(orc.__all__) == {
        "Orchestrator",
        "OrcError",
        "Principal",
        "Services",
        "Settings",
        "TurnRequest",
        "TurnResult",
        "build_orchestrator",
        "build_runtime",
        "__version__",
    }
    for name in orc.__all__:
        assert getattr(orc, name) is not None


def test_importing_orc_loads_no_graph_mcp_or_storage_sdk() -> None:
    code = (
        "import sys, orc, orc.errors, orc.settings; "
        "heavy = [m for m in ('langgraph', 'mcp', 'azure.cosmos', 'aiosqlite', 'openai') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()

    assert loaded == ""


def test_importing_the_shipped_test_doubles_loads_neither_pytest_nor_the_conformance_suites() -> None:
    code = (
        "import sys, orc.testing, orc.storage; "
        "loaded = [m for m in ('pytest', 'pytest_asyncio', 'orc.testing.conformance') if m in sys.modules]; "
        "print(','.join(loaded))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()

    assert loaded == ""


def test_a_server_started_on_the_offline_model_never_imports_the_openai_client(tmp_path: Path) -> None:
    # The OpenAI client is about a second of CPU at start-up: a server whose model is offline has no use for it.
    code = (
        "import asyncio, sys\n"
        "from asgi_lifespan import LifespanManager\n"
        "from orc.http import create_app\n"
        "async def start():\n"
        "    async with LifespanManager(create_app(), startup_timeout=120):\n"
        "        pass\n"
        "asyncio.run(start())\n"
        "print(','.join(m for m in ('openai', 'langchain_openai') if m in sys.modules))\n"
    )
    environment = {**os.environ, "ORC_HOME": str(tmp_path)}
    environment.pop("ORC_MODEL", None)
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=environment
    ).stdout.strip()

    assert loaded == ""
