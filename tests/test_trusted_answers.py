"""Offline answers people can trust (issue 39), on every path a person asks by: Python, HTTP through ``orc serve``,
the CLI and MCP ``document_chat``. Greetings and thanks get a person's reply; "Summarize X" is answered from X's
stored digest with its facts cited; a question the documents cannot answer is declined with places to look, which
are never citations."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from orc.cli.commands import Console
from orc.cli.commands import ask as cli_ask
from orc.composition import Services, build_runtime, in_memory_mcp
from orc.contracts import DocumentChatResult
from orc.documents.intake.uploads import Upload
from orc.mcp_client import McpToolbox
from orc.models.declines import NOT_FOUND
from orc.models.small_talk import small_talk_reply
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.tool_contract import DOCUMENT_CHAT
from orc.turns import TurnRequest, TurnResult
from tests.serving import orc_serve

GPL = Path(__file__).resolve().parent.parent / "bench" / "real_documents" / "documents" / "gpl-3.0.txt"
TURN = {"conversation_id": "c1", "blob_names": ["gpl-3.0.txt"]}
UNANSWERABLE = "What does the licence say about parking fees for tenants?"
THANKS = "Hello, thanks!"
SUMMARIZE = "Can you summarize gpl-3.0.txt for me?"


@pytest.fixture
async def services(tmp_path: Path) -> AsyncIterator[Services]:
    settings = Settings(home=tmp_path / "home", model="offline", storage="embedded", auth="none")
    async with build_runtime(settings) as built:
        await built.foundation.session_files.add(LOCAL_PRINCIPAL, "c1", [Upload("gpl-3.0.txt", GPL.read_bytes())])
        assert await built.documents.digests.wait_idle(LOCAL_PRINCIPAL, "c1", 120)
        yield built


async def stored_summary(services: Services) -> str:
    """The opening of the per-file digest's summary of the attached licence, as stored (up to its first "<": the
    output policy escapes raw markup in answers)."""
    (found,) = await services.documents.library.summaries_for_turn(
        LOCAL_PRINCIPAL, "c1", None, ["gpl-3.0.txt"], facts=8
    )
    assert found.summary is not None
    return found.summary.summary.split("<")[0]


async def test_in_python_a_decline_lists_places_to_look_that_are_stored_with_it_and_are_not_citations(
    services: Services,
) -> None:
    result = await services.orchestrator.ask(TurnRequest(question=UNANSWERABLE, **TURN))

    assert isinstance(result, TurnResult)
    assert result.answer.startswith(NOT_FOUND) and result.citations == []
    assert 1 <= len(result.places_to_look) <= 3
    assert all(
        place.document == "gpl-3.0.txt" and place.ref.startswith("gpl-3.0.txt::") for place in result.places_to_look
    )
    assert all(place.document_id and place.document_id.startswith("doc-") for place in result.places_to_look)
    text = " ".join(GPL.read_text().split())
    assert all(place.excerpt.removesuffix("…") in text for place in result.places_to_look)
    (turn,) = await services.foundation.conversations.turns(LOCAL_PRINCIPAL, "c1")
    assert turn.assistant.places_to_look == result.places_to_look


async def test_in_python_an_answer_lists_no_places_and_thanks_get_a_welcome(services: Services) -> None:
    answered = await services.orchestrator.ask(
        TurnRequest(question="How many days after the violation stops is a licence reinstated for good?", **TURN)
    )
    thanked = await services.orchestrator.ask(TurnRequest(question=THANKS, **TURN))

    assert isinstance(answered, TurnResult) and isinstance(thanked, TurnResult)
    assert answered.citations and answered.places_to_look == []
    assert thanked.answer == small_talk_reply(THANKS)
    assert thanked.citations == [] and thanked.places_to_look == []


async def test_in_the_cli_a_decline_prints_its_places_to_look_and_thanks_print_a_welcome(services: Services) -> None:
    declined, thanked = io.StringIO(), io.StringIO()

    await cli_ask(services.orchestrator, Console(declined, io.StringIO()), TurnRequest(question=UNANSWERABLE, **TURN))
    await cli_ask(services.orchestrator, Console(thanked, io.StringIO()), TurnRequest(question=THANKS, **TURN))

    printed = declined.getvalue()
    assert NOT_FOUND in printed
    assert "Places to look:" in printed and "  - gpl-3.0.txt" in printed
    assert thanked.getvalue().startswith("You're welcome") and "Places to look" not in thanked.getvalue()


async def test_through_mcp_document_chat_a_decline_has_places_to_look_and_thanks_a_welcome(services: Services) -> None:
    connection = in_memory_mcp(services.published_mcp_server)
    try:
        toolbox = McpToolbox(connection, principal=LOCAL_PRINCIPAL, scope={"session_id": "c1"})
        results = []
        for question in (UNANSWERABLE, THANKS):
            outcome = await toolbox.call(
                DOCUMENT_CHAT, {"question": question, "document_names": ["gpl-3.0.txt"], "mode": "answer"}
            )
            assert not outcome.is_error, outcome.text
            results.append(DocumentChatResult.model_validate_json(outcome.text))
    finally:
        await connection.aclose()
    declined, thanked = results

    assert declined.answer == NOT_FOUND
    assert declined.metadata.places_to_look and declined.metadata.places_to_look[0].document == "gpl-3.0.txt"
    assert thanked.answer == small_talk_reply(THANKS) and thanked.metadata.places_to_look == []


def test_over_http_through_orc_serve_the_answer_and_the_streams_final_event_carry_the_places(tmp_path: Path) -> None:
    with orc_serve(tmp_path / "home") as (base_url, _), httpx.Client(base_url=base_url, timeout=60) as client:
        files = [("files", ("gpl-3.0.txt", GPL.read_bytes(), "text/plain"))]
        assert client.post("/api/sessions/c1/context/files", files=files).status_code == 201
        # The context stream ends once nothing is parsing: the file's digest is made by then.
        settled = client.get("/api/sessions/c1/context/stream").text.strip().splitlines()[-1]
        answer = client.post("/api/orc", json={"question": UNANSWERABLE, **TURN}).json()
        streamed = client.post(
            "/api/orc", json={"question": UNANSWERABLE, **TURN}, headers={"Accept": "application/x-ndjson"}
        )
        thanked = client.post("/api/orc", json={"question": THANKS, **TURN}).json()
        summarized = client.post("/api/orc", json={"question": SUMMARIZE, **TURN}).json()
        history = client.get("/api/sessions/c1").json()

    final = json.loads(streamed.text.splitlines()[-1])
    assert answer["answer"] == NOT_FOUND and answer["citations"] == []
    assert answer["places_to_look"] and set(answer["places_to_look"][0]) >= {
        "ref",
        "document",
        "document_id",
        "span_id",
        "page",
        "section",
        "excerpt",
    }
    assert final["type"] == "final" and final["places_to_look"] == answer["places_to_look"]
    assert thanked["answer"] == small_talk_reply(THANKS) and thanked["places_to_look"] == []
    stored = [message for message in history["messages"] if message["role"] == "assistant"]
    assert stored[0]["places_to_look"] == answer["places_to_look"]
    assert summarized["answer"].startswith("gpl-3.0.txt: ") and summarized["citations"], (summarized, settled)


async def test_summarize_is_answered_from_the_files_digest_in_python_the_cli_and_mcp(services: Services) -> None:
    summary = await stored_summary(services)

    result = await services.orchestrator.ask(TurnRequest(question=SUMMARIZE, **TURN))
    printed = io.StringIO()
    await cli_ask(services.orchestrator, Console(printed, io.StringIO()), TurnRequest(question=SUMMARIZE, **TURN))
    connection = in_memory_mcp(services.published_mcp_server)
    try:
        toolbox = McpToolbox(connection, principal=LOCAL_PRINCIPAL, scope={"session_id": "c1"})
        outcome = await toolbox.call(
            DOCUMENT_CHAT, {"question": "What is gpl-3.0.txt about?", "document_names": ["gpl-3.0.txt"]}
        )
    finally:
        await connection.aclose()
    mcp = DocumentChatResult.model_validate_json(outcome.text)

    assert isinstance(result, TurnResult)
    assert result.answer.startswith(f"gpl-3.0.txt: {summary}") and "Key points:" in result.answer
    assert len(result.citations) >= 2 and all(c.document == "gpl-3.0.txt" for c in result.citations)
    assert result.places_to_look == []
    assert printed.getvalue().startswith(f"gpl-3.0.txt: {summary}")
    assert mcp.answer.startswith(f"gpl-3.0.txt: {summary}") and "[gpl-3.0.txt::S" in mcp.answer


async def test_asked_what_is_in_a_file_that_could_not_be_read_the_answer_says_so_and_promises_nothing(
    services: Services,
) -> None:
    broken = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog"  # a PDF cut off in its first object
    await services.foundation.session_files.add(LOCAL_PRINCIPAL, "c2", [Upload("scan.pdf", broken)])
    assert await services.documents.digests.wait_idle(LOCAL_PRINCIPAL, "c2", 120)

    result = await services.orchestrator.ask(
        TurnRequest(question="What is in scan.pdf?", conversation_id="c2", blob_names=["scan.pdf"])
    )

    assert isinstance(result, TurnResult)
    assert result.answer.startswith("scan.pdf has no summary: no text could be read from it")
    assert "once the file is processed" not in result.answer
