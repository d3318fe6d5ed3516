"""One output policy on the server: no raw HTML, no image from a host not allowed, no link with a script scheme —
in the answer as it streams and as it is stored, in quotes, titles, suggestions, every export and /api/mcp."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from mcp_server.output import clean_tool_results
from orc.composition import build_runtime
from orc.documents.intake.uploads import Upload
from orc.http import create_app
from orc.output_policy import OutputPolicy, Removed
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.testing import FunctionChatModel
from orc.turns import TurnRequest, TurnResult
from tests.adversarial.hostile import CORPUS, survivors
from tests.http.conftest import open_client, upload
from tests.mcp_server.helpers import connect
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, serve
from tests.support import lifespan

HOSTILE = "The rent is 900 euros. " + " ".join(CORPUS[:4])


@pytest.mark.parametrize("hostile", CORPUS)
def test_hostile_markdown_and_html_are_neutralized(hostile: str) -> None:
    cleaned, removed = OutputPolicy().clean(hostile)

    assert survivors(cleaned) == []
    assert removed.total >= 1
    assert OutputPolicy().clean(cleaned) == (cleaned, Removed())  # cleaning twice removes nothing more


def test_images_from_an_allowed_host_and_plain_links_stay() -> None:
    policy = OutputPolicy.allowing(["img.example"])
    text = "![chart](https://img.example/c.png) [docs](https://docs.example) [mail](mailto:a@b.example) AT&T < 3"

    assert policy.clean(text) == (text, Removed())
    assert policy.clean("![c](http://img.example/c.png)")[0] == "c"  # an allowed host, but not over https


@pytest.mark.parametrize(
    ("text", "html"), [("plain text, AT&T &amp; 5 > 2", 0), ("a\x00b", 1), ("x <b>y</b>", 2), ("<!-- c -->", 1)]
)
def test_markup_is_counted_wherever_the_html_tokenizer_finds_it(text: str, html: int) -> None:
    assert OutputPolicy().clean(text)[1].html == html


# Constructs a stream can split where a careless cut point would let them through: a link text over two lines, a
# destination after a line break, a nested link, a definition's target on the next line, a tag over two lines.
SPLIT_PRONE = (
    *CORPUS,
    "[a](\njavascript:alert(1))",
    "[a [b](javascript:1) c](https://x.example)",
    "x [r]:\njavascript:alert(1)",
    "  [r]: javascript:alert(1)\nsee [r]",
    "<img\nsrc=x onerror=alert(1)>",
    "[ [x]( <javascript:alert(1)> )",
    "<![![n](javascript:1)](https://evil.example)",
)


def _splits(text: str) -> list[list[str]]:
    """The text one character at a time, and cut in two at every place."""
    return [list(text)] + [[text[:at], text[at:]] for at in range(1, len(text))]


@pytest.mark.parametrize("hostile", SPLIT_PRONE)
def test_a_streamed_text_in_any_pieces_is_sent_exactly_as_the_whole_text_is_cleaned(hostile: str) -> None:
    policy = OutputPolicy()
    text = f"The rent is 900 euros [lease.txt::S1]. {hostile} Paid monthly."
    whole, removed = policy.clean(text)

    for pieces in _splits(text):
        stream = policy.stream()
        sent = "".join(stream.feed(piece) for piece in pieces) + stream.flush()
        assert (sent, stream.removed) == (whole, removed), pieces
    assert survivors(whole) == [] and removed.total >= 1


def _streamed(response_lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response_lines if line.strip()]


async def test_an_answer_whose_links_a_model_streams_in_pieces_is_sent_stored_and_counted_as_one_text() -> None:
    # Deltas as a real model's tokens cut them: inside the link texts, the schemes and the tag.
    pieces = [
        "The rent is 900 euros [lease.txt::S1]. It is due monthly [multi\nlin",
        "e](javascript",
        ":alert(1)) [lease.txt::S1]. Pay it [pay",
        " here](java",
        "script:alert(3)) [lease.txt::S1]. Then <im",
        "g src=x onerror=alert(2)> [lease.txt::S1].",
    ]
    for running in serve(OpenAIEndpoint()):
        running.endpoint.reset(Reply(text="".join(pieces), pieces=pieces))
        settings = Settings(
            model="openai:test-model", model_base_url=running.base_url, model_api_key="k-123456", digest_model="offline"
        )
        async with open_client(settings) as client:
            await upload(client, "c1", ("lease.txt", b"The rent is 900 euros."))
            turn = {"question": "What is the rent?", "conversation_id": "c1", "blob_names": ["lease.txt"]}
            async with client.stream("POST", "/api/orc", json=turn, headers={"Accept": "application/x-ndjson"}) as r:
                events = _streamed([line async for line in r.aiter_lines()])
            stored = (await client.get("/api/sessions/c1")).json()["messages"][-1]["content"]

    streamed = "".join(event["text"] for event in events if event["type"] == "token")
    final = next(event for event in events if event["type"] == "final")
    assert "900 euros" in streamed and survivors(streamed) == []
    assert "javascript:alert" not in streamed.replace("]\\(javascript", "")
    assert streamed.strip() == final["answer"] == stored  # what is stored is what was sent
    assert final["metadata"]["sanitized"] == {"html": 1, "images": 0, "links": 2}


def test_a_stream_split_inside_an_image_still_never_sends_it() -> None:
    stream = OutputPolicy().stream()
    sent = "".join(stream.feed(piece) for piece in ["see ![", "x](https://ev", "il.example/?q=1) and <scr", "ipt>"])
    sent += stream.flush()

    assert survivors(sent) == [] and "evil.example" not in sent
    assert stream.removed.images == 1 and stream.removed.html == 1


def _hostile_answer(messages: list[Any], tools: list[dict[str, Any]]) -> str:
    return f"{HOSTILE} [lease.txt::S1]"


def _answer_with_a_chart(messages: list[Any], tools: list[dict[str, Any]]) -> str:
    return "The rent is 900 euros [lease.txt::S1]. ![chart](https://img.example/rent.png)"


async def test_an_answers_image_is_kept_only_from_a_host_the_output_image_hosts_setting_allows() -> None:
    answers = {}
    for hosts in ([], ["img.example"]):
        async with build_runtime(
            Settings(output_image_hosts=hosts), model=FunctionChatModel(_answer_with_a_chart)
        ) as orc:
            await orc.foundation.session_files.add(
                LOCAL_PRINCIPAL, "c1", [Upload("lease.txt", b"The rent is 900 euros.")]
            )
            result = await orc.orchestrator.ask(
                TurnRequest(question="What is the rent?", conversation_id="c1", blob_names=["lease.txt"])
            )
        assert isinstance(result, TurnResult)
        answers[tuple(hosts)] = result.answer

    assert "https://img.example/rent.png" not in answers[()] and "chart" in answers[()]
    assert "![chart](https://img.example/rent.png)" in answers[("img.example",)]


async def test_a_hostile_answer_is_cleaned_in_the_stream_the_result_the_history_and_every_export() -> None:
    settings = Settings()
    async with open_client(settings, model=FunctionChatModel(_hostile_answer)) as client:
        await upload(client, "c1", ("lease.txt", HOSTILE.encode()))
        turn = {"question": f"What is the rent? {CORPUS[1]}", "conversation_id": "c1", "blob_names": ["lease.txt"]}
        async with client.stream("POST", "/api/orc", json=turn, headers={"Accept": "application/x-ndjson"}) as r:
            events = [json.loads(line) async for line in r.aiter_lines() if line.strip()]
        history = await client.get("/api/sessions/c1")
        sessions = await client.get("/api/sessions")
        exports = {fmt: await client.get(f"/api/sessions/c1/export?format={fmt}") for fmt in ("markdown", "json")}
        pdf = await client.get("/api/sessions/c1/export?format=pdf")

    streamed = "".join(event["text"] for event in events if event["type"] == "token")
    final = next(event for event in events if event["type"] == "final")
    answer = final["answer"] if "answer" in final else final["result"]["answer"]
    assert "900 euros" in streamed
    assert survivors(streamed) == [] and survivors(answer) == []
    assert all(survivors(citation["quote"]) == [] for citation in final["citations"])
    assert all(survivors(suggestion) == [] for suggestion in final.get("suggestions", []))
    stored = history.json()["messages"]
    assert stored[-1]["content"] == answer  # the stored answer is the cleaned one
    assert all(survivors(message["content"]) == [] for message in stored if message["role"] == "assistant")
    assert survivors(sessions.json()["sessions"][0]["title"]) == []
    assert survivors(exports["markdown"].text) == []
    assert all(survivors(value) == [] for value in _strings(exports["json"].json()))
    assert pdf.status_code == 200
    metadata = final.get("metadata") or final["result"]["metadata"]
    # The answer's own: two script tags and an image tag escaped, an image dropped, a link unlinked (its quote of
    # the same span counts again).
    assert metadata["sanitized"]["html"] >= 3
    assert metadata["sanitized"]["images"] >= 1 and metadata["sanitized"]["links"] >= 1


async def test_an_mcp_client_gets_no_hostile_markup_from_a_documents_text() -> None:
    app = create_app(Settings())
    async with lifespan(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as http:
            assert (await upload(http, "c1", ("lease.txt", HOSTILE.encode()))).status_code == 201
            async with (
                streamable_http_client("http://127.0.0.1:8000/api/mcp", http_client=http) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                chat = await session.call_tool(
                    "document_chat",
                    {"question": "What is the rent?", "document_names": ["lease.txt"], "session_id": "c1"},
                )
                found = await session.call_tool("documents.search", {"query": "rent euros", "session_id": "c1"})

    for result in (chat, found):
        assert not result.isError
        texts = list(_strings(result.structuredContent)) + [getattr(block, "text", "") for block in result.content]
        assert any("900 euros" in text for text in texts)
        assert all(survivors(text) == [] for text in texts)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


async def test_a_stdio_mcp_client_gets_cleaned_tool_results_too() -> None:
    async with build_runtime(Settings()) as services:
        await services.foundation.session_files.add(LOCAL_PRINCIPAL, "c1", [Upload("lease.txt", HOSTILE.encode())])
        # What `orc mcp` does to the server it serves over stdio (this server is this test's alone).
        clean_tool_results(services.documents.server._mcp_server, OutputPolicy())
        async with connect(services.documents.server, LOCAL_PRINCIPAL) as session:
            found = await session.call_tool("documents.search", {"query": "rent euros", "session_id": "c1"})

    texts = list(_strings(found.structuredContent)) + [getattr(block, "text", "") for block in found.content]
    assert not found.isError and any("900 euros" in text for text in texts)
    assert all(survivors(text) == [] for text in texts)
