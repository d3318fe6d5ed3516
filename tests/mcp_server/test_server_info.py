"""The server introduces itself as orc, with orc's version (not the MCP SDK's), in both name forms, and building
it leaves the embedding application's logging alone."""

from __future__ import annotations

import logging

import pytest

import orc
from mcp_server.server import OrcMCP
from orc.conversations import FocusContext
from orc.settings import Settings
from orc.tool_contract import TOOL_NAME_FORMS, ToolNameForm
from orc.turns import TurnRequest
from tests.documents.library_support import ACME, build_tree, open_runtime
from tests.mcp_server.helpers import connect


@pytest.mark.parametrize("form", TOOL_NAME_FORMS)
async def test_server_info_reports_orcs_version_and_instructions_in_the_servers_name_form(form: ToolNameForm) -> None:
    async with (
        open_runtime(Settings(mcp_tool_names=form)) as runtime,
        connect(runtime.published_mcp_server, ACME) as session,
    ):
        initialized = await session.initialize()

    assert initialized.serverInfo.name == "orc"
    assert initialized.serverInfo.version == orc.__version__
    assert initialized.instructions is not None
    assert ("documents_list" in initialized.instructions) is (form == "underscore")


async def test_the_orchestrator_keeps_its_dotted_server_and_answers_when_underscore_names_are_published() -> None:
    async with open_runtime(Settings(mcp_tool_names="underscore")) as runtime:
        await build_tree(runtime.foundation)
        in_process = {tool.name for tool in await runtime.documents.server.list_tools()}
        published = {tool.name for tool in await runtime.published_mcp_server.list_tools()}
        question = TurnRequest(question="What is the code word of u11?", context=FocusContext(type="usecase", id="u11"))
        result = await runtime.orchestrator.ask(question, ACME)

    assert "documents.list" in in_process and "documents_list" not in in_process
    assert "documents_list" in published and "documents.list" not in published
    assert "zebrau11" in result.answer


def test_building_the_server_adds_no_handler_to_an_application_that_has_not_configured_logging(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])

    OrcMCP("orc")

    assert root.handlers == []
