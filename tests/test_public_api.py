"""The public API is what ``orc.__all__`` says, and importing orc builds nothing."""

from __future__ import annotations

import subprocess
import sys

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
