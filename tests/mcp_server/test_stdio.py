"""``python -m mcp_server`` over stdio, spawned as a real subprocess and driven by the MCP stdio client."""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from pydantic import BaseModel, ValidationError, field_validator

import orc
from mcp_server.tools import argument_errors, split_tool_error
from orc.cli.mcp import main
from orc.composition import open_stores
from orc.contracts import DocumentChatResult
from orc.names import BlobPaths
from orc.settings import Settings
from orc.tool_contract import PORTABLE_TOOL_NAME

REPO = Path(__file__).resolve().parents[2]
CONVERSATION = "conv-1"


def _server(home: Path, *arguments: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_server", *arguments],
        # Only ORC_HOME: the server must come up on the embedded defaults (SQLite, local folder, offline model).
        env={"ORC_HOME": str(home)},
        cwd=REPO,
    )


async def _attach(home: Path, name: str, data: bytes) -> None:
    """Put a session document where the embedded stores of ``home`` keep it, as an upload would."""
    async with AsyncExitStack() as stack:
        stores = await open_stores(Settings(home=home), stack)
        await stores.blobs.put(BlobPaths.session_blob("acme", "alice", CONVERSATION, name), data)


@pytest.mark.slow
async def test_the_stdio_server_lists_its_tools_and_answers_for_the_startup_principal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    await _attach(home, "handbook.txt", b"Vacation: every employee has 25 days of paid vacation per year.")
    arguments = {"question": "How many vacation days?", "document_names": ["handbook.txt"], "session_id": CONVERSATION}

    with (tmp_path / "stderr.log").open("w") as errlog:
        async with (
            stdio_client(_server(home, "--organization", "acme", "--user", "alice"), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool("document_chat", arguments)

    assert "document_chat" in [tool.name for tool in tools.tools]
    assert result.isError is False
    parsed = DocumentChatResult.model_validate(result.structuredContent)
    assert "25 days" in parsed.answer
    assert "[handbook.txt::S1]" in parsed.answer
    assert parsed.files[0].blob_name == "handbook.txt"


@pytest.mark.slow
async def test_another_principal_over_stdio_cannot_see_the_document(tmp_path: Path) -> None:
    home = tmp_path / "home"
    await _attach(home, "handbook.txt", b"Vacation: 25 days.")
    arguments = {"question": "Vacation?", "document_names": ["handbook.txt"], "session_id": CONVERSATION}

    with (tmp_path / "stderr.log").open("w") as errlog:
        async with (
            stdio_client(_server(home, "--organization", "acme", "--user", "bob"), errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("document_chat", arguments)

    assert result.isError is True
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    assert "not_found: " in text


ORC_COMMAND = Path(sys.executable).with_name("orc")
"""The ``orc`` console script of the interpreter running the tests (the one a desktop client's config names)."""


@pytest.mark.slow
@pytest.mark.parametrize(
    "command",
    [[sys.executable, "-m", "mcp_server"], [str(ORC_COMMAND), "mcp"]],
    ids=["python -m mcp_server", "orc mcp"],
)
async def test_a_plain_stdio_server_publishes_names_every_major_client_accepts(
    tmp_path: Path, command: list[str]
) -> None:
    server = StdioServerParameters(command=command[0], args=command[1:], env={"ORC_HOME": str(tmp_path)}, cwd=REPO)

    with (tmp_path / "stderr.log").open("w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            listed = await session.call_tool("documents_list", {})

    assert {"documents_list", "documents_get_page", "session_attach_document"} <= set(names)
    assert [name for name in names if not PORTABLE_TOOL_NAME.fullmatch(name)] == []
    assert listed.isError is False


@pytest.mark.slow
async def test_dotted_names_stay_available_over_stdio_as_an_option(tmp_path: Path) -> None:
    server = _server(tmp_path / "home", "--tool-names", "dotted")

    with (tmp_path / "stderr.log").open("w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}

    assert {"documents.list", "documents.get_span", "session.attach_document"} <= names


def test_an_invalid_principal_option_exits_with_status_2_before_starting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--organization", "acme", "--user", "../bob"]) == 2

    assert "--organization and --user must be plain ids" in capsys.readouterr().err


@pytest.mark.slow
async def test_the_stdio_server_attaches_a_file_by_path_from_an_allowed_folder_with_underscore_names(
    tmp_path: Path,
) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "notes.txt").write_text("The launch is on Tuesday.", encoding="utf-8")
    server = _server(tmp_path / "home", "--tool-names", "underscore", "--allow-dir", str(allowed))

    with (tmp_path / "stderr.log").open("w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            initialized = await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}
            attached = await session.call_tool(
                "session_attach_path", {"session_id": CONVERSATION, "path": str(allowed / "notes.txt")}
            )
            escaped = await session.call_tool(
                "session_attach_path", {"session_id": CONVERSATION, "path": str(allowed / ".." / "stderr.log")}
            )

    assert initialized.serverInfo.version == orc.__version__
    assert {"documents_list", "contexts_list", "session_attach_path"} <= names
    assert attached.isError is False and attached.structuredContent is not None
    assert attached.structuredContent["change"]["status"] == "ready"
    assert escaped.isError is True and "path_not_allowed" in str(escaped.content[0])


LONG_HANDBOOK = "\n\n".join(f"Rule {n}. Every employee keeps the office and the kitchen tidy." for n in range(400))
"""A handbook past the length at which documents.get_content advises searching instead of reading on."""


@pytest.mark.slow
async def test_the_advice_and_errors_of_a_plain_stdio_server_name_the_tools_as_it_publishes_them(
    tmp_path: Path,
) -> None:
    server = _server(tmp_path / "home")
    handbook = {"session_id": CONVERSATION, "filename": "handbook.txt", "content": LONG_HANDBOOK}

    with (tmp_path / "stderr.log").open("w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("session_attach_document", handbook)
            listed = await session.call_tool("documents_list", {"session_id": CONVERSATION})
            assert listed.structuredContent is not None, listed.content
            document_id = listed.structuredContent["documents"][0]["document_id"]
            read = await session.call_tool(
                "documents_get_content", {"document_id": document_id, "session_id": CONVERSATION}
            )
            missing = await session.call_tool("documents_get_content", {"document_id": "doc-missing"})

    assert read.isError is False and read.structuredContent is not None
    advice = read.structuredContent["hint"]
    assert "documents_search" in advice and "documents." not in advice
    assert advice in "\n".join(block.text for block in read.content if isinstance(block, types.TextContent))
    assert missing.isError is True
    error = "\n".join(block.text for block in missing.content if isinstance(block, types.TextContent))
    assert "documents_list" in error and "documents." not in error


@pytest.mark.slow
async def test_arguments_that_do_not_fit_are_refused_one_plain_line_each_with_a_stable_code(tmp_path: Path) -> None:
    server = _server(tmp_path / "home")

    with (tmp_path / "stderr.log").open("w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            searched = await session.call_tool(
                "documents_search", {"query": "rent", "limit": "ten", "document_ids": "doc-1", "scope": "all"}
            )
            asked = await session.call_tool("document_chat", {"question": 3, "mode": "loud"})

    texts = [
        "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
        for result in (searched, asked)
    ]
    assert searched.isError and asked.isError
    for text in texts:
        assert "pydantic" not in text and "Value error" not in text and "validation error" not in text, text
    assert [split_tool_error(text) for text in texts] == [
        (
            "invalid_input",
            "limit: must be a whole number (got 'ten')\n"
            "document_ids: must be a list (got 'doc-1')\n"
            "scope: not an argument of this tool",
        ),
        (
            "invalid_input",
            "question: must be text (got 3)\n"
            "document_names: required\n"
            "session_id: required\n"
            "mode: must be one of 'answer' or 'evidence' (got 'loud')",
        ),
    ]


@pytest.mark.slow
async def test_a_malformed_ref_is_explained_in_words_a_client_shows_as_they_are(tmp_path: Path) -> None:
    server = _server(tmp_path / "home")

    with (tmp_path / "stderr.log").open("w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("documents_get_span", {"source_ref": "no separator"})

    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    assert result.isError and split_tool_error(text)[0] == "invalid_source_ref"
    # No <document>::<span_id> placeholder: the transport escapes markup, and it read "&lt;document&gt;".
    assert "&lt;" not in text and "(lease.pdf::S3)" in text, text


def test_a_validators_own_words_are_kept_without_pydantics_value_error_prefix() -> None:
    class Arguments(BaseModel):
        session_id: str

        @field_validator("session_id")
        @classmethod
        def named(cls, value: str) -> str:
            raise ValueError("a session id names one conversation, not a path")

    with pytest.raises(ValidationError) as refused:
        Arguments.model_validate({"session_id": "../x"})

    assert argument_errors(refused.value) == (
        "invalid_input: session_id: a session id names one conversation, not a path (got '../x')"
    )
