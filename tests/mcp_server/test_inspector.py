"""The MCP Inspector CLI (the reference MCP client) lists and calls every tool of orc's MCP server.

The inspector runs one method per invocation. Every tool is called over streamable HTTP against one ``orc serve``
started for the test (a stdio server would cold-start once per call); the stdio transport is driven by the
inspector in the underscore-names test, which is a stdio start-up option.

The inspector is pinned in ``tools/emulators`` (``make test`` installs it with the emulators) and run with
``node`` directly: through ``npx`` each call also resolved the package. Without it the test is skipped locally and
fails in CI (``CI=true``), so a CI image that lost Node cannot pass silently.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from orc.composition import build_runtime
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from tests.serving import orc_serve, statuses, wait_until_processed

REPO = Path(__file__).resolve().parents[2]
INSPECTOR = (
    REPO / "tools" / "emulators" / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build" / "index.js"
)
FETCH_CAUSES = Path(__file__).with_name("fetch_causes.cjs")
TIMEOUT_SECONDS = 120
PARALLEL_CALLS = 3
SESSION = "inspector-session"


def _node() -> str:
    node = shutil.which("node")
    if node is None or not INSPECTOR.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail("node or the MCP Inspector CLI is missing: run `make emulators` (tools/emulators)")
        pytest.skip("node or the MCP Inspector CLI (make emulators) is missing")
    return node


def stdio(*options: str) -> list[str]:
    """The inspector's target: ``python -m mcp_server`` over stdio, started by the inspector."""
    return [sys.executable, "-m", "mcp_server", *options]


def http(base_url: str) -> list[str]:
    """The inspector's target: a running server's ``/api/mcp`` over streamable HTTP."""
    return [f"{base_url}/api/mcp", "--transport", "http"]


async def inspect(node: str, home: Path, target: list[str], *arguments: str) -> dict[str, Any]:
    """Run the inspector CLI once against ``target``; its stdout is the JSON result."""
    process = await asyncio.create_subprocess_exec(
        node,
        str(INSPECTOR),
        *target,
        *arguments,
        cwd=REPO,
        # The preload writes why an HTTP exchange failed, which the inspector reduces to "fetch failed".
        env={**os.environ, "ORC_HOME": str(home), "NODE_OPTIONS": f"--require {FETCH_CAUSES}"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), TIMEOUT_SECONDS)
    except TimeoutError:
        pytest.fail(f"the MCP Inspector CLI did not finish within {TIMEOUT_SECONDS} s: {' '.join(arguments)}")
    finally:
        # Given up (a deadline, or a sibling call failed and this one was cancelled): no inspector outlives the
        # test, and the test's event loop has no subprocess left to wait for when it closes.
        if process.returncode is None:
            process.kill()
            await asyncio.shield(process.wait())
    served_log = home.parent / "serve.log"
    served = served_log.read_text(errors="replace")[-2000:] if served_log.is_file() else ""
    assert process.returncode == 0, (stderr.decode(errors="replace")[-2000:], served)
    result: dict[str, Any] = json.loads(stdout)
    return result


def call_arguments(tool: str, **arguments: str) -> list[str]:
    flags = ["--method", "tools/call", "--tool-name", tool]
    for key, value in arguments.items():
        flags += ["--tool-arg", f"{key}={value}"]
    return flags


async def seed(home: Path) -> dict[str, str]:
    """An organization document and a session document for the stdio server's (default) principal."""
    async with build_runtime(Settings(home=home)) as runtime:
        (doc,) = await runtime.foundation.context_documents.add(
            LOCAL_PRINCIPAL,
            ContextRef("organization", "default"),
            [Upload("policy.md", b"# Policy\n\nVisitors must sign in at the front desk.")],
        )
        mutation = await runtime.foundation.session_files.add(
            LOCAL_PRINCIPAL, SESSION, [Upload("memo.txt", b"The meeting moved to room 12.")]
        )
    return {"policy": doc.record.document_id, "memo": mutation.files[0].file_id}


@pytest.mark.slow
async def test_the_inspector_lists_and_calls_every_tool(tmp_path: Path) -> None:
    node = _node()
    home = tmp_path / "home"
    ids = await seed(home)
    focus = {"context_type": "organization", "context_id": "default", "session_id": SESSION}
    with orc_serve(home) as (base_url, _):
        await call_every_tool(node, home, http(base_url), ids, focus)
        # The attachment's own answer may still say `processing` on a busy machine: its readiness is awaited.
        processed = await asyncio.to_thread(wait_until_processed, base_url, SESSION)
    assert statuses(processed) == {"n.txt": "ready"}


async def call_every_tool(node: str, home: Path, target: list[str], ids: dict[str, str], focus: dict[str, str]) -> None:
    listed = await inspect(node, home, target, "--method", "tools/list")
    reads = {
        "documents.list": call_arguments("documents.list", **focus),
        "documents.search": call_arguments("documents.search", query="front desk visitors", **focus),
        "documents.get_content": call_arguments(
            "documents.get_content", document_id=ids["policy"], offset="0", limit="100", **focus
        ),
        "documents.get_summary": call_arguments("documents.get_summary", document_id=ids["policy"], **focus),
        "documents.get_span": call_arguments("documents.get_span", source_ref="policy.md::S1", **focus),
        "documents.get_page": call_arguments("documents.get_page", document_id=ids["policy"], page="1", **focus),
        "session.list_documents": call_arguments("session.list_documents", session_id=SESSION),
        "contexts.list": call_arguments("contexts.list"),
        "document_chat": call_arguments(
            "document_chat", question="Which room?", document_names='["memo.txt"]', session_id=SESSION
        ),
    }
    slots = asyncio.Semaphore(PARALLEL_CALLS)

    async def bounded(arguments: list[str]) -> dict[str, Any]:
        async with slots:
            return await inspect(node, home, target, *arguments)

    # A task group: when one call fails the others are cancelled (their inspectors stopped) before the server.
    async with asyncio.TaskGroup() as calls:
        running = {name: calls.create_task(bounded(arguments)) for name, arguments in reads.items()}
    read_results = {name: task.result() for name, task in running.items()}
    # After get_summary (analyze makes the summary that get_summary refuses to invent).
    analyzed = await inspect(
        node, home, target, *call_arguments("documents.analyze", document_id=ids["policy"], **focus)
    )
    attached = await inspect(
        node,
        home,
        target,
        *call_arguments("session.attach_document", session_id=SESSION, filename="n.txt", content="Note."),
    )
    removed = await inspect(
        node, home, target, *call_arguments("session.remove_document", session_id=SESSION, document_id=ids["memo"])
    )

    assert {tool["name"] for tool in listed["tools"]} == {
        *reads,
        "documents.analyze",
        "session.attach_document",
        "session.remove_document",
    }
    for name, result in read_results.items():
        if name == "documents.get_summary":
            assert result["isError"] is True and "no_summary" in result["content"][0]["text"]
        elif name == "documents.get_page":  # a Markdown file has no pages
            assert result["isError"] is True and "not_paged" in result["content"][0]["text"]
        else:
            assert result.get("isError") is False, (name, result)
    assert analyzed["structuredContent"]["summary"]["facts"][0]["sources"] == ["policy.md::S1"]
    assert read_results["documents.search"]["structuredContent"]["results"][0]["ref"] == "policy.md::S1"
    assert read_results["documents.get_content"]["structuredContent"]["total"] > 0
    assert read_results["documents.get_span"]["structuredContent"]["spans"][0]["ref"] == "policy.md::S1"
    assert "12" in read_results["document_chat"]["structuredContent"]["answer"]
    assert attached["structuredContent"]["change"]["filename"] == "n.txt"
    assert removed["structuredContent"]["change"]["diff"] == "deleted"
    assert read_results["contexts.list"]["structuredContent"]["organization"] == "default"


@pytest.mark.slow
async def test_the_inspector_lists_and_calls_underscore_tool_names(tmp_path: Path) -> None:
    node = _node()
    home = tmp_path / "home"
    await seed(home)

    target = stdio("--tool-names", "underscore")
    # One after the other: each invocation cold-starts a server, whose answer to `initialize` the inspector awaits
    # for at most the SDK's fixed 60 s; two starting at once on a busy machine halve each one's share of it.
    listed = await inspect(node, home, target, "--method", "tools/list")
    called = await inspect(node, home, target, *call_arguments("documents_list"))

    assert "documents_list" in {tool["name"] for tool in listed["tools"]}
    assert [doc["filename"] for doc in called["structuredContent"]["documents"]] == ["policy.md"]
