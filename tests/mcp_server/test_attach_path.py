"""session.attach_path attaches a local file by path over stdio only, and only from the allowed folders."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession

from mcp_server.tools import local_files
from mcp_server.tools.local_files import AllowedFolders, stdio_transport
from orc.composition import Services
from orc.errors import ConfigurationError
from tests.documents.library_support import ACME, open_runtime
from tests.mcp_server.helpers import connect
from tests.mcp_server.test_document_tools import call, error_code


@pytest.fixture
def allowed(tmp_path: Path) -> Path:
    folder = tmp_path / "allowed"
    folder.mkdir()
    (folder / "notes.txt").write_text("The launch is on Tuesday.", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("The password is hunter2.", encoding="utf-8")
    return folder


@pytest.fixture
async def runtime(allowed: Path) -> AsyncIterator[Services]:
    async with open_runtime() as built:
        local_files.register(
            built.documents.server, built.foundation.session_files, built.foundation.scopes, AllowedFolders([allowed])
        )
        yield built


@asynccontextmanager
async def over_stdio(runtime: Services) -> AsyncIterator[ClientSession]:
    """An in-memory session whose server task runs as ``python -m mcp_server`` runs it (the stdio flag set)."""
    token = stdio_transport.set(True)
    try:
        async with connect(runtime.documents.server, ACME) as session:
            yield session
    finally:
        stdio_transport.reset(token)


async def test_a_file_in_an_allowed_folder_is_attached_and_listed_in_the_session(
    runtime: Services, allowed: Path
) -> None:
    async with over_stdio(runtime) as session:
        attached = await call(session, "session.attach_path", {"session_id": "s1", "path": str(allowed / "notes.txt")})
        listed = await call(session, "session.list_documents", {"session_id": "s1"})

    assert attached["change"]["filename"] == "notes.txt"
    assert attached["change"]["status"] == "ready"
    assert [doc["filename"] for doc in listed["documents"]] == ["notes.txt"]


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("{allowed}/../secret.txt", "path_not_allowed"),
        ("{allowed}/escape.txt", "path_not_allowed"),
        ("{outside}/secret.txt", "path_not_allowed"),
        ("/etc/passwd", "path_not_allowed"),
        ("notes.txt", "path_not_allowed"),
        ("{allowed}/missing.txt", "file_not_found"),
        ("{allowed}", "file_not_found"),
    ],
)
async def test_paths_outside_the_allowed_folders_are_refused_and_nothing_is_attached(
    runtime: Services, allowed: Path, path: str, code: str
) -> None:
    (allowed / "escape.txt").symlink_to(allowed.parent / "secret.txt")
    named = path.format(allowed=allowed, outside=allowed.parent)

    async with over_stdio(runtime) as session:
        result = await session.call_tool("session.attach_path", {"session_id": "s1", "path": named})
        listed = await session.call_tool("session.list_documents", {"session_id": "s1"})

    assert error_code(result) == code
    assert error_code(listed) == "session_not_found"  # no session was even created


async def test_attaching_by_path_is_refused_outside_stdio(runtime: Services, allowed: Path) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        arguments = {"session_id": "s1", "path": str(allowed / "notes.txt")}
        result = await session.call_tool("session.attach_path", arguments)

    assert error_code(result) == "path_not_allowed"


async def test_without_allowed_folders_the_tool_is_not_published() -> None:
    async with open_runtime() as built:
        local_files.register(
            built.documents.server, built.foundation.session_files, built.foundation.scopes, AllowedFolders([])
        )
        names = {tool.name for tool in await built.documents.server.list_tools()}

    assert "session.attach_path" not in names


def test_an_allowed_folder_that_does_not_exist_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not an existing directory"):
        AllowedFolders([tmp_path / "nope"])
