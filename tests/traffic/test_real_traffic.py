"""``orc serve`` driven over loopback the way its clients drive it: ``httpx``, ``urllib`` and ``curl`` upload real
documents and generated PDF, DOCX and XLSX files of 1 to 20 MB, wait for them to be processed, ask about them (a JSON
answer, then NDJSON and server-sent event streams) and export the conversation; an MCP client talks to ``/api/mcp``
over streamable HTTP. Each runs under both HTTP parsers and with two worker processes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.documents.pdf_factory import make_pdf
from tests.serving import statuses, wait_until_processed
from tests.traffic.clients import CLIENTS, ClientName, CurlClient, HttpxClient, UrllibClient, events, open_client
from tests.traffic.conftest import SERVERS
from tests.traffic.documents import KINDS, MB, REAL, SIZES, Document, Kind

pytestmark = pytest.mark.slow


def assigned(server: str, client: ClientName) -> tuple[Kind, int]:
    """The generated document a client sends to a server: a Latin square, so that across the three servers each
    client sends each kind and each size once, and each kind is sent at each size once."""
    i, j = list(SERVERS).index(server), CLIENTS.index(client)
    return KINDS[(i + j) % 3], SIZES[(2 * i + j) % 3]


@pytest.fixture
def client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HttpxClient | UrllibClient | CurlClient]:
    opened = open_client(request.param, tmp_path)
    yield opened
    opened.close()


def turn(question: str, session_id: str, blob_names: list[str]) -> dict[str, Any]:
    return {"question": question, "conversation_id": session_id, "blob_names": blob_names}


def answered_with(answer: dict[str, Any], document: Document) -> None:
    assert answer["answer"].strip(), answer
    assert document.expected in answer["answer"], answer["answer"]
    assert {citation["document"] for citation in answer["citations"]} == {document.filename}, answer["citations"]


@pytest.mark.parametrize("client", CLIENTS, indirect=True)
def test_a_client_uploads_large_and_real_documents_asks_about_them_and_exports_the_conversation(
    served: str,
    request: pytest.FixtureRequest,
    client: HttpxClient | UrllibClient | CurlClient,
    generated: dict[tuple[Kind, int], Document],
) -> None:
    server, name = request.node.callspec.params["served"], request.node.callspec.params["client"]
    document = generated[assigned(server, name)]
    real = REAL[CLIENTS.index(name)]
    session_id = f"{server}-{name}"
    files = f"{served}/api/sessions/{session_id}/context/files"

    uploaded = client.upload(files, [document, real])
    assert uploaded.status == 201, uploaded.body[:1000]
    assert [change["filename"] for change in uploaded.json()["files"]] == [document.filename, real.filename]

    manifest = wait_until_processed(served, session_id)
    assert statuses(manifest) == {document.filename: "ready", real.filename: "ready"}
    sizes = {file["filename"]: file["size_bytes"] for file in manifest["files"]}
    assert sizes == {document.filename: document.size, real.filename: real.size}

    asked = client.post_json(f"{served}/api/orc", turn(document.question, session_id, [document.filename]))
    assert asked.status == 200, asked.body[:1000]
    answered_with(asked.json(), document)

    for fmt in ("ndjson", "sse"):
        accept = "application/x-ndjson" if fmt == "ndjson" else "text/event-stream"
        streamed = client.post_json(f"{served}/api/orc", turn(real.question, session_id, [real.filename]), accept)
        assert streamed.status == 200, streamed.body[:1000]
        received = events(streamed, fmt)
        kinds = [event["type"] for event in received]
        assert kinds[-1] == "final", kinds
        assert "token" in kinds and "error" not in kinds, kinds
        final = received[-1]
        assert "".join(event["text"] for event in received if event["type"] == "token") == final["answer"]
        assert {citation["document"] for citation in final["citations"]} == {real.filename}, final

    markdown = client.get(f"{served}/api/sessions/{session_id}/export?format=markdown")
    pdf = client.get(f"{served}/api/sessions/{session_id}/export?format=pdf")
    exported = client.get(f"{served}/api/sessions/{session_id}/export?format=json")

    assert markdown.status == 200 and markdown.content_type.startswith("text/markdown")
    assert document.question in markdown.body.decode() and document.expected in markdown.body.decode()
    assert pdf.status == 200 and pdf.body.startswith(b"%PDF-")
    assert exported.status == 200
    messages = exported.json()["messages"]
    assert [message["role"] for message in messages] == ["user", "assistant"] * 3


def test_an_mcp_client_over_streamable_http_finds_and_answers_from_an_uploaded_document(
    served: str, generated: dict[tuple[Kind, int], Document]
) -> None:
    document = generated["pdf", SIZES[1]]
    session_id = "mcp-session"
    with httpx.Client(timeout=300) as http, document.path.open("rb") as handle:
        files = [("files", (document.filename, handle, document.media_type))]
        assert http.post(f"{served}/api/sessions/{session_id}/context/files", files=files).status_code == 201
    wait_until_processed(served, session_id)

    async def session_calls() -> tuple[set[str], Any, Any]:
        async with (
            httpx.AsyncClient(timeout=300) as http,
            streamable_http_client(f"{served}/api/mcp", http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            listed = await session.call_tool("session.list_documents", {"session_id": session_id})
            answer = await session.call_tool(
                "document_chat",
                {"question": document.question, "document_names": [document.filename], "session_id": session_id},
            )
            return tools, listed, answer

    tools, listed, answer = anyio.run(session_calls)

    assert {"document_chat", "documents.search", "session.list_documents"} <= tools
    assert not listed.isError, listed.content
    assert document.filename in json.dumps(listed.structuredContent)
    assert not answer.isError, answer.content
    assert answer.structuredContent is not None
    assert document.expected in answer.structuredContent["answer"]
    assert answer.structuredContent["files"][0]["blob_name"] == document.filename


@pytest.fixture(scope="module")
def over_the_limit(tmp_path_factory: pytest.TempPathFactory) -> Document:
    """A 32 MB PDF: well over the default 20 MiB upload limit, more than the sockets' buffers hold."""
    path = tmp_path_factory.mktemp("over") / "scan-32mb.pdf"
    path.write_bytes(make_pdf([["A scanned contract."]], padding=32 * MB))
    return Document(path.name, path, "application/pdf", "", "")


@pytest.mark.parametrize(
    "client",
    ["httpx", "urllib", "curl"],
    indirect=True,
)
def test_an_upload_over_the_limit_is_refused_with_413_and_its_code_and_nothing_is_stored(
    served: str,
    request: pytest.FixtureRequest,
    client: HttpxClient | UrllibClient | CurlClient,
    over_the_limit: Document,
) -> None:
    session_id = f"over-{request.node.callspec.params['client']}"

    refused = client.upload(f"{served}/api/sessions/{session_id}/context/files", [over_the_limit])

    assert refused.status == 413, refused.body[:500]
    assert refused.json()["code"] == "payload_too_large"
    stored = httpx.get(f"{served}/api/sessions/{session_id}/context", timeout=60)
    assert (stored.status_code, stored.json()["code"]) == (404, "session_not_found")
