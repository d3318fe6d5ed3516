"""contexts.list shows the caller's context tree; documents.list with no scope lists the organization's view."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from orc.composition import Services
from orc.principal import Principal
from tests.documents.library_support import ACME, build_tree, open_runtime
from tests.mcp_server.helpers import connect
from tests.mcp_server.test_document_tools import call, text_of


@pytest.fixture
async def runtime() -> AsyncIterator[Services]:
    async with open_runtime() as built:
        await build_tree(built.foundation)
        yield built


async def test_documents_list_without_arguments_lists_every_context_of_the_organization(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        listed = await call(session, "documents.list", {})

    assert {doc["filename"] for doc in listed["documents"]} == {
        "acme.txt",
        "f1.txt",
        "f2.txt",
        "u11.txt",
        "u12.txt",
        "u21.txt",
    }
    assert listed["focus_context"] == {"type": "organization", "id": "acme"}


async def test_a_session_alone_still_lists_only_the_session_documents(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        listed = await call(session, "documents.list", {"session_id": "conv-1"})

    assert [doc["filename"] for doc in listed["documents"]] == ["session.txt"]


async def test_search_without_a_scope_searches_the_organizations_documents_too(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        found = await call(session, "documents.search", {"query": "code word of u21"})

    assert any(hit["ref"].startswith("u21.txt::") for hit in found["results"])


async def test_contexts_list_shows_the_tree_parents_before_children(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        result = await session.call_tool("contexts.list", {})

    assert result.structuredContent is not None
    entries = [(c["context_type"], c["context_id"], c["depth"]) for c in result.structuredContent["contexts"]]
    assert entries == [
        ("organization", "acme", 0),
        ("folder", "f1", 1),
        ("usecase", "u11", 2),
        ("usecase", "u12", 2),
        ("folder", "f2", 1),
        ("usecase", "u21", 2),
    ]
    assert "  - folder f1 (F1)" in text_of(result)


async def test_contexts_list_never_shows_another_organizations_tree(runtime: Services) -> None:
    async with connect(runtime.documents.server, Principal(organization="globex", user="bob")) as session:
        result = await call(session, "contexts.list", {})

    assert [(c["context_type"], c["context_id"]) for c in result["contexts"]] == [("organization", "globex")]
