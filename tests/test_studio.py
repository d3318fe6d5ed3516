"""``langgraph.json`` names a factory that imports cheaply and builds a turn graph that runs on the offline defaults."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from orc.documents.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL

REPO = Path(__file__).resolve().parents[1]


def factory_reference() -> tuple[str, str]:
    """The module and function ``langgraph.json`` names for the turn graph (``./orc/studio.py:make_graph``)."""
    config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
    path, function = config["graphs"]["orc_turn"].split(":")
    module = Path(path).with_suffix("").as_posix().removeprefix("./").replace("/", ".")
    return module, function


def test_importing_the_factory_module_builds_nothing() -> None:
    module, _ = factory_reference()
    code = f"import sys, {module}; print('orc.composition' in sys.modules, 'langgraph.graph.state' in sys.modules)"
    # The composition root is imported (the factory needs it) but no graph is compiled or service opened at import.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.split() == ["True", "True"]
    assert done.stderr == ""


async def test_the_factory_yields_the_turn_graph_that_answers_from_the_embedded_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORC_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ORC_MODEL", raising=False)
    monkeypatch.delenv("ORC_STORAGE", raising=False)
    from orc.composition import build_runtime
    from orc.settings import Settings

    async with build_runtime(Settings()) as runtime:
        await runtime.session_files.add(
            LOCAL_PRINCIPAL, "studio-1", [Upload("policy.md", b"# Policy\n\nVisitors must sign in at the front desk.")]
        )
    module, function = factory_reference()
    make_graph = getattr(importlib.import_module(module), function)

    async with make_graph({"configurable": {"thread_id": "studio-1"}}) as graph:
        nodes = set(graph.get_graph().nodes)
        final = await graph.ainvoke(
            {"question": "Where must visitors sign in?"},
            {"configurable": {"thread_id": "studio-1"}},
        )

    assert {"query_planner", "tool_router", "mcp_executor", "context_builder", "answer"} <= nodes
    assert "front desk" in final["answer"]
