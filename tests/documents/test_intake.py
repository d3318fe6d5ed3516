"""One intake pipeline (issue 25 item 3): every way bytes come in refuses the same bad name, oversized file,
decompression bomb and slow-to-parse document the same way — the same code for what is refused before anything
is stored, the same failure reason for what fails while it is parsed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult

from mcp_server.tools import local_files
from mcp_server.tools.local_files import AllowedFolders, stdio_transport
from orc.cli import main
from tests.adversarial.test_decompression_bombs import docx_with_a_hidden_part
from tests.documents.library_support import ACME, open_runtime
from tests.documents.pdf_factory import make_pdf
from tests.http.conftest import open_client, upload
from tests.http.test_context_handoff import LEASE, paused, supply_path
from tests.mcp_server.helpers import connect
from tests.mcp_server.test_document_tools import call, error_code

MB = 1024 * 1024
MAX_UPLOAD_BYTES = 8 * MB
DEADLINE_SECONDS = 0.3


def slow_pdf() -> bytes:
    """A PDF of 2,000 dense pages (4 MB): seconds to parse, far past :data:`DEADLINE_SECONDS`."""
    return make_pdf([[f"line {line} of page {page}, with a few words" for line in range(40)] for page in range(2000)])


CASES = {
    "bad name": ("notes%2e.txt", lambda: b"Plain notes."),
    "oversized": ("big.txt", lambda: b"x" * (MAX_UPLOAD_BYTES + 1)),
    "bomb": ("bomb.docx", lambda: docx_with_a_hidden_part(300 * MB)),
    "slow to parse": ("slow.pdf", slow_pdf),
}


@dataclass(frozen=True)
class Outcome:
    """A refusal's code (nothing stored), or ``failed`` with the document's reason."""

    code: str
    reason: str | None = None


async def through_http_session_upload(name: str, data: bytes, folder: Path) -> Outcome:
    async with open_client() as client:
        response = await client.post("/api/sessions/s1/context/files", files=[("files", (name, data, None))])
        if response.status_code >= 400:
            return Outcome(response.json()["code"])
        listed = await client.get("/api/sessions/s1/context")
    (file,) = listed.json()["files"]
    return Outcome(file["status"], file["status_reason"])


async def through_http_context_upload(name: str, data: bytes, folder: Path) -> Outcome:
    async with open_client() as client:
        assert (await client.put("/api/contexts/folder/legal", json={"name": "Legal"})).status_code < 300
        response = await client.post("/api/contexts/folder/legal/documents", files=[("files", (name, data, None))])
    body = response.json()
    if response.status_code >= 400:
        return Outcome(body["code"])
    (document,) = body["documents"]
    return Outcome(document["status"], document["status_reason"])


async def through_mcp_attach_path(name: str, data: bytes, folder: Path) -> Outcome:
    (folder / name).write_bytes(data)
    async with open_runtime() as runtime:
        local_files.register(
            runtime.documents.server,
            runtime.foundation.session_files,
            runtime.foundation.scopes,
            AllowedFolders([folder]),
        )
        token = stdio_transport.set(True)
        try:
            async with connect(runtime.documents.server, ACME) as session:
                result: CallToolResult = await session.call_tool(
                    "session.attach_path", {"session_id": "s1", "path": str(folder / name)}
                )
                if result.isError:
                    return Outcome(error_code(result))
                listed = await call(session, "session.list_documents", {"session_id": "s1"})
        finally:
            stdio_transport.reset(token)
    (document,) = listed["documents"]
    return Outcome(document["status"], document.get("status_reason"))


async def through_http_supply(name: str, data: bytes, folder: Path) -> Outcome:
    """A file supplied to a paused turn's context request: refused, or its parse failing, with the same code."""
    async with open_client() as client:
        await upload(client, "c1", ("lease.txt", LEASE))
        request = await paused(client)
        response = await client.post(
            supply_path(request["request_id"]), data={"slot": "evidence"}, files=[("files", (name, data, None))]
        )
    body = response.json()
    assert response.status_code >= 400, body
    if response.status_code == 422:
        return Outcome("failed", body["detail"])  # its text could not be read: the reason a document fails with
    return Outcome(body["code"])


PATHS: dict[str, Callable[[str, bytes, Path], Coroutine[Any, Any, Outcome]]] = {
    "HTTP session upload": through_http_session_upload,
    "HTTP context upload": through_http_context_upload,
    "HTTP supply": through_http_supply,
    "MCP attach by path": through_mcp_attach_path,
}


def through_cli_docs_add(name: str, data: bytes, folder: Path, capsys: pytest.CaptureFixture[str]) -> Outcome:
    (folder / name).write_bytes(data)
    main(["docs", "add", str(folder / name), "--session", "s1"])
    # The progress bar's line for the file: "[###] 1/1 <name>: skipped (<code>: …)" or "… <name>: failed (<reason>)".
    line = next(line for line in capsys.readouterr().err.splitlines() if f" {name}: " in line)
    outcome = line.split(f" {name}: ", 1)[1].strip()
    if outcome.startswith("skipped ("):
        return Outcome(outcome.removeprefix("skipped (").split(":", 1)[0])
    status, _, reason = outcome.partition(" (")
    return Outcome(status, reason.removesuffix(")") or None)


@pytest.mark.parametrize("case", list(CASES))
def test_every_intake_path_refuses_the_same_file_the_same_way(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ORC_MAX_UPLOAD_BYTES", str(MAX_UPLOAD_BYTES))
    monkeypatch.setenv("ORC_EXTRACTION_SECONDS", str(DEADLINE_SECONDS))
    if case == "slow to parse":
        # In a worker process, as orc parses by default: a thread past its deadline cannot be stopped, so each
        # path's event loop would wait at its exit for the whole parse (minutes on a busy machine). The worker
        # is stopped at the deadline.
        monkeypatch.setenv("ORC_EXTRACTION_PROCESSES", "1")
    name, content = CASES[case]
    data = content()
    outcomes: dict[str, Outcome] = {}
    for index, (path, send) in enumerate(PATHS.items()):
        folder = tmp_path / f"in-{index}"
        folder.mkdir()
        outcomes[path] = asyncio.run(send(name, data, folder))
    cli_folder = tmp_path / "cli"
    cli_folder.mkdir()
    outcomes["CLI docs add"] = through_cli_docs_add(name, data, cli_folder, capsys)

    expected = {
        "bad name": Outcome("invalid_name"),
        "oversized": Outcome("payload_too_large"),
        "bomb": Outcome("failed", outcomes["HTTP session upload"].reason),
        "slow to parse": Outcome("failed", outcomes["HTTP session upload"].reason),
    }[case]
    assert outcomes == dict.fromkeys(outcomes, expected)
    if case == "bomb":
        assert expected.reason is not None and "decompression bomb" in expected.reason
    if case == "slow to parse":
        assert expected.reason is not None and f"longer than {DEADLINE_SECONDS:g} s" in expected.reason
