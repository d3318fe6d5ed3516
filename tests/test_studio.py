"""``langgraph.json`` names a factory that imports cheaply and builds a turn graph that runs on the offline defaults."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from tests.emulators import free_port

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
        await runtime.foundation.session_files.add(
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


def _langgraph_missing() -> str | None:
    try:
        importlib.import_module("langgraph_cli")
        importlib.import_module("langgraph_api")
    except ImportError as exc:  # pragma: no cover - the dev extra installs them
        return f"langgraph-cli[inmem] is not installed ({exc.name}); pip install -e '.[dev]'"
    return None


@pytest.fixture
def langgraph_dev(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``langgraph dev`` on loopback, offline (no tracing, no analytics, no browser, no reload), serving the graph
    ``langgraph.json`` names, from a scratch folder (it writes ``.langgraph_api/`` where it runs); its URL and
    ORC_HOME."""
    missing = _langgraph_missing()
    if missing:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
    config["graphs"] = {name: str(REPO / spec.removeprefix("./")) for name, spec in config["graphs"].items()}
    config["dependencies"] = [str(REPO)]
    (tmp_path / "langgraph.json").write_text(json.dumps(config), encoding="utf-8")
    port = free_port()
    home = tmp_path / "home"
    env = {
        **os.environ,
        "ORC_HOME": str(home),
        "ORC_MODEL": "offline",
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    command = [str(Path(sys.executable).with_name("langgraph")), "dev", "--no-browser", "--no-reload"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--config", str(tmp_path / "langgraph.json")]
    log = tmp_path / "langgraph-dev.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STUDIO_START_SECONDS
        while True:
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            assert time.monotonic() < deadline, "langgraph dev did not answer in time"
            time.sleep(0.2)  # poll interval, not a wait for readiness
        yield url, home
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


STUDIO_START_SECONDS = 120.0
"""``langgraph dev`` imports langgraph-api and orc before it answers; on a loaded machine that takes a while."""


async def _attach_policy(home: Path, conversation_id: str) -> None:
    from orc.composition import build_runtime
    from orc.settings import Settings

    async with build_runtime(Settings(home=home)) as runtime:
        policy = Upload("policy.md", b"# Policy\n\nVisitors must sign in at the front desk.")
        await runtime.foundation.session_files.add(LOCAL_PRINCIPAL, conversation_id, [policy])


@pytest.mark.slow
def test_langgraph_dev_runs_a_real_turn_through_its_api(langgraph_dev: tuple[str, Path]) -> None:
    url, home = langgraph_dev
    thread = str(uuid.uuid4())
    asyncio.run(_attach_policy(home, thread))  # the thread is the conversation: its session has the policy

    with httpx.Client(base_url=url, timeout=120) as api:
        (assistant,) = api.post("/assistants/search", json={"graph_id": "orc_turn"}).json()
        assert api.post("/threads", json={"thread_id": thread}).status_code == 200
        run = api.post(
            f"/threads/{thread}/runs/wait",
            json={
                "assistant_id": assistant["assistant_id"],
                "input": {"question": "Where must visitors sign in?", "blob_names": ["policy.md"]},
            },
        )

    assert run.status_code == 200, run.text
    final = run.json()
    assert "__error__" not in final, final
    assert "front desk" in final["answer"]
    assert [citation["document"] for citation in final["citations"]] == ["policy.md"]
