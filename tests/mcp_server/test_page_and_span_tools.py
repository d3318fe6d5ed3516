"""documents.get_page and documents.get_span: a PDF page with its spans, a span by its ref, the same scope rules."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from orc.composition import Services
from orc.documents.intake.uploads import Upload
from orc.documents.records import ContextRef
from orc.principal import Principal
from tests.documents.library_support import ACME, SESSION, build_tree, open_runtime
from tests.documents.pdf_factory import make_pdf
from tests.mcp_server.helpers import connect
from tests.mcp_server.test_document_tools import FOCUS_U11, call, document_id, error_code

GLOBEX = Principal(organization="globex", user="gina")
REPORT = make_pdf([["Report, page one.", "Nothing to see here."], ["The budget for 2027 is 4.2 million euros."]])


@pytest.fixture
async def runtime() -> AsyncIterator[Services]:
    async with open_runtime() as built:
        await build_tree(built.foundation)
        await built.foundation.context_documents.add(ACME, ContextRef("usecase", "u11"), [Upload("report.pdf", REPORT)])
        yield built


async def test_a_pdf_page_comes_with_the_spans_on_it_and_a_span_reads_back_by_its_ref(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        report = await document_id(session, "report.pdf")

        page = await call(session, "documents.get_page", {"document_id": report, "page": 2, **FOCUS_U11})
        ref = page["spans"][0]["ref"]
        span = await call(session, "documents.get_span", {"source_ref": ref, **FOCUS_U11})

    assert (page["page"], page["page_count"]) == (2, 2) and "4.2 million" in page["text"]
    assert all(located["page"] == 2 for located in page["spans"])
    assert span["spans"][0]["ref"] == ref and "4.2 million" in span["spans"][0]["text"]
    assert span["spans"][0]["page"] == 2


async def test_search_returns_ten_results_by_default(runtime: Services) -> None:
    texts = [Upload(f"note{i}.txt", f"Note {i} mentions the zebra crossing.".encode()) for i in range(14)]
    await runtime.foundation.session_files.add(ACME, SESSION, texts)
    async with connect(runtime.documents.server, ACME) as session:
        found = await call(session, "documents.search", {"query": "zebra crossing", **FOCUS_U11})

    assert len(found["results"]) == 10


@pytest.mark.parametrize(
    ("tool", "arguments", "code"),
    [
        ("documents.get_page", {"page": 3}, "page_not_found"),
        ("documents.get_page", {"page": 1, "text_document": "u11.txt"}, "not_paged"),
        ("documents.get_span", {"source_ref": "report.pdf::S99"}, "span_not_found"),
        ("documents.get_span", {"source_ref": "made-up.pdf::S1"}, "document_not_found"),
        ("documents.get_span", {"source_ref": "no separator"}, "invalid_source_ref"),
    ],
)
async def test_pages_and_spans_that_do_not_exist_are_refused_with_their_code(
    runtime: Services, tool: str, arguments: dict[str, object], code: str
) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        if tool == "documents.get_page":
            name = str(arguments.pop("text_document", "report.pdf"))
            arguments["document_id"] = await document_id(session, name)
        result = await session.call_tool(tool, {**arguments, **FOCUS_U11})

    assert error_code(result) == code


async def test_another_tenant_finds_neither_the_page_nor_the_span(runtime: Services) -> None:
    async with connect(runtime.documents.server, ACME) as session:
        report = await document_id(session, "report.pdf")
    async with connect(runtime.documents.server, GLOBEX) as session:
        page = await session.call_tool("documents.get_page", {"document_id": report, "page": 1, "session_id": SESSION})
        span = await session.call_tool("documents.get_span", {"source_ref": "report.pdf::S1", "session_id": SESSION})

    assert error_code(page) == "document_not_found"
    assert error_code(span) == "document_not_found"
