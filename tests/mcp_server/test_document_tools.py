"""The documents.* and session.* tools through a real MCP client session (in memory), over the real library."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import ClientSession, types

from mcp_server.tools import split_tool_error
from orc.composition import Services, Stores, build_runtime
from orc.documents.catalog import library as library_module
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.settings import Settings
from orc.storage.memory import MemoryCollectionProvider
from tests.documents.gates import GatedBlobStore
from tests.documents.library_support import ACME, SESSION, build_tree, open_runtime
from tests.mcp_server.helpers import connect

TOOLS = {
    "document_chat",
    "documents.list",
    "documents.analyze",
    "documents.get_content",
    "documents.get_summary",
    "documents.search",
    "documents.get_page",
    "documents.get_span",
    "contexts.list",
    "session.attach_document",
    "session.list_documents",
    "session.remove_document",
}
FOCUS_U11 = {"session_id": SESSION, "context_type": "usecase", "context_id": "u11"}


@pytest.fixture
async def runtime() -> AsyncIterator[Services]:
    async with open_runtime() as built:
        await build_tree(built.foundation)
        yield built


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def error_code(result: types.CallToolResult) -> str:
    assert result.isError, result.structuredContent
    return split_tool_error(text_of(result))[0]


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    assert not result.isError, text_of(result)
    assert result.structuredContent is not None
    return result.structuredContent


async def document_id(session: ClientSession, filename: str, scope: dict[str, Any] = FOCUS_U11) -> str:
    listed = await call(session, "documents.list", scope)
    return next(doc["document_id"] for doc in listed["documents"] if doc["filename"] == filename)


async def test_every_tool_is_listed_with_its_dotted_name(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS


async def test_documents_list_returns_each_document_with_its_origin_and_status(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        listed = await call(session, "documents.list", FOCUS_U11)

        first = listed["documents"][0]
        assert {"document_id", "filename", "context_type", "context_id", "status", "has_summary", "size_bytes"} <= set(
            first
        )
        assert "token_estimate" in first
        assert [(d["filename"], d["context_type"], d["context_id"]) for d in listed["documents"]] == [
            ("session.txt", "session", SESSION),
            ("u11.txt", "usecase", "u11"),
            ("f1.txt", "folder", "f1"),
            ("acme.txt", "organization", "acme"),
        ]
        assert listed["total"] == 4 and listed["next_offset"] is None
        assert listed["focus_context"] == {"type": "usecase", "id": "u11"}


async def test_search_returns_ranked_spans_with_source_refs_locators_and_contexts(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        found = await call(session, "documents.search", {"query": "code word of u11", **FOCUS_U11})

        best = found["results"][0]
        assert best["ref"] == "u11.txt::S1"
        assert best["document_id"] == await document_id(session, "u11.txt")
        assert (best["context_type"], best["context_id"], best["origin"]) == ("usecase", "u11", "focus")
        assert best["locator"].startswith("characters ")
        assert "zebrau11" in best["text"]
        assert found["searched_documents"] == 4


async def test_search_can_target_documents_by_id(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        target = await document_id(session, "f1.txt")
        found = await call(session, "documents.search", {"query": "code word", "document_ids": [target], **FOCUS_U11})

        assert {hit["filename"] for hit in found["results"]} == {"f1.txt"}


async def test_get_content_pages_the_text_with_next_offset_and_total(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        target = await document_id(session, "u11.txt")
        first = await call(session, "documents.get_content", {"document_id": target, "limit": 20, **FOCUS_U11})
        second = await call(
            session, "documents.get_content", {"document_id": target, "offset": first["next_offset"], **FOCUS_U11}
        )

        assert first["offset"] == 0 and first["next_offset"] == 20 and len(first["text"]) == 20
        assert first["text"] + second["text"] == "The usecase u11 document says the code word of u11 is zebrau11."
        assert second["next_offset"] is None and second["total"] == first["total"]
        assert first["spans"][0]["ref"] == "u11.txt::S1"


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"offset": -1}, "invalid_range"),
        ({"limit": 0}, "invalid_range"),
        ({"limit": 10_000_000}, "invalid_range"),
        ({"offset": 10**12}, "invalid_input"),
    ],
)
async def test_get_content_refuses_negative_or_huge_offsets_and_limits(
    runtime: Services, arguments: dict[str, int], code: str
) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        target = await document_id(session, "u11.txt")
        result = await session.call_tool("documents.get_content", {"document_id": target, **arguments, **FOCUS_U11})

        assert error_code(result) == code


async def test_get_summary_says_there_is_no_summary_until_analyze_makes_one(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        target = await document_id(session, "u11.txt")
        before = await session.call_tool("documents.get_summary", {"document_id": target, **FOCUS_U11})
        analyzed = await call(session, "documents.analyze", {"document_id": target, **FOCUS_U11})
        after = await call(session, "documents.get_summary", {"document_id": target, **FOCUS_U11})

        assert error_code(before) == "no_summary"
        assert analyzed["status"] == "ready" and analyzed["digest_status"] == "ready"
        assert analyzed["has_summary"] is True and analyzed["summary"] == after
        assert "zebrau11" in after["summary"] and after["prompt_version"] == "v1.4"
        assert after["facts"] and all(fact["sources"] == ["u11.txt::S1"] for fact in after["facts"])


async def test_documents_outside_the_scope_are_not_found(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        outside = await document_id(session, "u21.txt", {"context_type": "organization", "context_id": "acme"})

        for tool in ("documents.get_content", "documents.get_summary", "documents.analyze"):
            result = await session.call_tool(tool, {"document_id": outside, **FOCUS_U11})
            assert error_code(result) == "document_not_found", tool
        searched = await session.call_tool("documents.search", {"query": "x", "document_ids": [outside], **FOCUS_U11})
        assert error_code(searched) == "document_not_found"


@pytest.mark.parametrize(
    ("scope", "code"),
    [
        ({"context_type": "planet", "context_id": "earth"}, "unknown_context_type"),
        ({"context_type": "folder"}, "invalid_input"),
        ({"context_type": "folder", "context_id": "nope"}, "context_not_found"),
        ({"context_type": "organization", "context_id": "globex"}, "context_not_found"),
        ({"context_type": "folder", "context_id": "../f1"}, "invalid_name"),
        ({"include_historical": True}, "invalid_input"),
        ({"session_id": "../other"}, "invalid_name"),
    ],
)
async def test_scope_arguments_are_validated_against_the_caller(
    runtime: Services, scope: dict[str, Any], code: str
) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        result = await session.call_tool("documents.list", scope)

        assert error_code(result) == code


async def test_session_tools_attach_list_and_remove_and_attached_text_is_searchable(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        attached = await call(
            session,
            "session.attach_document",
            {"session_id": SESSION, "filename": "memo.md", "content": "# Memo\n\nThe boat is moored at pier 7."},
        )
        encoded = base64.b64encode(b"Binary-safe notes: the gate code is 1234.").decode()
        await call(
            session,
            "session.attach_document",
            {"session_id": SESSION, "filename": "gate.txt", "content": encoded, "encoding": "base64"},
        )
        found = await call(session, "documents.search", {"query": "boat pier", "session_id": SESSION})
        listed = await call(session, "session.list_documents", {"session_id": SESSION})
        removed = await call(
            session,
            "session.remove_document",
            {"session_id": SESSION, "document_id": attached["change"]["file_id"]},
        )
        after = await call(session, "session.list_documents", {"session_id": SESSION})

        assert attached["change"]["status"] == "ready" and attached["document"]["status"] == "ready"
        assert found["results"][0]["ref"] == "memo.md::S1"
        assert [(d["filename"], d["status"]) for d in listed["documents"]] == [
            ("session.txt", "ready"),
            ("memo.md", "ready"),
            ("gate.txt", "ready"),
        ]
        assert removed["change"]["diff"] == "deleted"
        assert [d["filename"] for d in after["documents"]] == ["session.txt", "gate.txt"]


@pytest.mark.parametrize(
    ("arguments", "code"),
    [
        ({"filename": "../x.txt", "content": "x"}, "invalid_name"),
        ({"filename": "empty.txt", "content": ""}, "empty_file"),
        (
            {"filename": "x.bin", "content": base64.b64encode(b"\x00\x01").decode(), "encoding": "base64"},
            "unsupported_media_type",
        ),
        ({"filename": "x.txt", "content": "not base64!", "encoding": "base64"}, "invalid_input"),
    ],
)
async def test_session_attach_refuses_bad_documents(runtime: Services, arguments: dict[str, str], code: str) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        result = await session.call_tool("session.attach_document", {"session_id": SESSION, **arguments})

        assert error_code(result) == code


async def test_an_unknown_session_is_not_found_for_the_session_tools(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        listed = await session.call_tool("session.list_documents", {"session_id": "never-used"})
        removed = await session.call_tool("session.remove_document", {"session_id": SESSION, "document_id": "doc-x"})

        assert error_code(listed) == "session_not_found"
        assert error_code(removed) == "file_not_found"


async def test_a_document_still_processing_is_refused_with_not_ready_and_analyze_reports_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(library_module, "ANALYZE_WAIT_SECONDS", 0.0)
    blobs = GatedBlobStore()
    scope = {"context_type": "organization", "context_id": "acme"}
    async with build_runtime(Settings(), stores=Stores(MemoryCollectionProvider(), blobs)) as built:
        blobs.gets.close()  # processing cannot read the file yet
        (doc,) = await built.foundation.context_documents.add(
            ACME, ContextRef("organization", "acme"), [Upload("slow.txt", b"Slow text.")], wait_seconds=0
        )
        target = doc.record.document_id
        async with connect(built.documents.server, ACME) as session:
            summary = await session.call_tool("documents.get_summary", {"document_id": target, **scope})
            content = await session.call_tool("documents.get_content", {"document_id": target, **scope})
            found = await call(session, "documents.search", {"query": "slow", **scope})
            analyzed = await call(session, "documents.analyze", {"document_id": target, **scope})
            blobs.gets.open()
            await doc.job  # type: ignore[misc]
            ready = await call(session, "documents.analyze", {"document_id": target, **scope})

    assert error_code(summary) == "not_ready" and error_code(content) == "not_ready"
    assert "documents.analyze" in text_of(summary)
    assert found["results"] == [] and found["not_ready"][0]["status"] == "processing"
    assert analyzed["status"] == "processing"
    assert ready["status"] == "ready"


async def test_analyze_says_a_file_too_long_to_summarize_will_have_no_summary(runtime: Services) -> None:
    manual = "\n\n".join(f"Section {n}. The daemon rereads its configuration on a hangup signal." for n in range(6000))
    await runtime.foundation.context_documents.add(
        ACME, ContextRef("usecase", "u11"), [Upload("manual.txt", manual.encode())]
    )
    async with connect(runtime.documents.server, ACME) as session:
        target = await document_id(session, "manual.txt")
        analyzed = await session.call_tool("documents.analyze", {"document_id": target, **FOCUS_U11})
        listed = await call(session, "documents.list", FOCUS_U11)
        summary = await session.call_tool("documents.get_summary", {"document_id": target, **FOCUS_U11})

    assert not analyzed.isError, text_of(analyzed)
    assert analyzed.structuredContent is not None
    assert analyzed.structuredContent["digest_status"] == "error"
    assert analyzed.structuredContent["digest_error_code"] == "too_long"
    assert "too long to summarize" in analyzed.structuredContent["message"]
    assert "summary: error (too_long)" in text_of(analyzed)
    (entry,) = [document for document in listed["documents"] if document["filename"] == "manual.txt"]
    assert entry["digest_error_code"] == "too_long" and entry["has_summary"] is False
    assert error_code(summary) == "no_summary"
    assert "too long to summarize" in text_of(summary) and "yet" not in text_of(summary)
