"""The chat product around the turn over HTTP: rename, feedback and export of a conversation."""

from __future__ import annotations

import io
import json
from typing import Any

import httpx
from pypdf import PdfReader

from orc.clock import utc_now
from orc.settings import Settings
from orc.testing import FunctionChatModel
from tests.documents.doubles import cite_first_source
from tests.http.conftest import ClientFactory, open_client, upload

LEASE = (
    b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first business day of each month.\n\n"
    b"Either party may end the lease by giving at least 60 days' written notice.\n"
)
KEYS = '{"key-a": {"organization": "acme", "user": "alice"}, "key-b": {"organization": "acme", "user": "bob"}}'
ALICE = {"Authorization": "Bearer key-a"}
BOB = {"Authorization": "Bearer key-b"}


async def ask(client: httpx.AsyncClient, question: str, model: str | None = None, **kwargs: object) -> dict[str, Any]:
    body: dict[str, Any] = {"question": question, "conversation_id": "conv-1", "blob_names": ["lease.txt"]}
    if model is not None:
        body["model"] = model
    response = await client.post("/api/orc", json=body, **kwargs)  # type: ignore[arg-type]
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def test_a_new_conversation_is_titled_from_its_first_question_and_can_be_renamed(
    client: httpx.AsyncClient,
) -> None:
    await upload(client, "conv-1", ("lease.txt", LEASE))
    await ask(client, "What is the notice period of the lease?")

    listed = (await client.get("/api/sessions")).json()["sessions"]
    assert listed[0]["title"] == "Notice period of the lease"

    renamed = await client.patch("/api/sessions/conv-1", json={"title": "  My\u200b lease  "})
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["title"] == "My lease"
    assert (await client.get("/api/sessions/conv-1")).json()["title"] == "My lease"


async def test_renaming_refuses_empty_and_unknown_sessions_and_extra_fields(client: httpx.AsyncClient) -> None:
    await upload(client, "conv-1", ("lease.txt", LEASE))
    await ask(client, "What is the rent?")

    empty = await client.patch("/api/sessions/conv-1", json={"title": " \u200b "})
    unknown = await client.patch("/api/sessions/nope", json={"title": "x"})
    extra = await client.patch("/api/sessions/conv-1", json={"title": "x", "owner": "mallory"})
    too_long = await client.patch("/api/sessions/conv-1", json={"title": "x" * 201})

    assert (empty.status_code, empty.json()["code"]) == (400, "empty_title")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "session_not_found")
    assert extra.status_code == 422
    assert (too_long.status_code, too_long.json()["code"]) == (413, "title_too_long")
    assert (await client.get("/api/sessions/conv-1")).json()["title"] == "Rent"


async def test_feedback_on_an_answer_is_one_record_shown_in_the_history(client: httpx.AsyncClient) -> None:
    await upload(client, "conv-1", ("lease.txt", LEASE))
    await ask(client, "What is the rent?")
    history = (await client.get("/api/sessions/conv-1")).json()["messages"]
    user_id, answer_id = history[0]["message_id"], history[1]["message_id"]
    assert (history[0]["created_at"], history[1]["created_at"]) != ("", "")

    first = await client.post(f"/api/sessions/conv-1/messages/{answer_id}/feedback", json={"rating": "down"})
    second = await client.post(
        f"/api/sessions/conv-1/messages/{answer_id}/feedback", json={"rating": "up", "comment": "spot on"}
    )

    assert first.status_code == second.status_code == 200, second.text
    assert second.json()["rating"] == "up"
    shown = (await client.get("/api/sessions/conv-1")).json()["messages"][1]["feedback"]
    assert (shown["rating"], shown["comment"]) == ("up", "spot on")
    on_question = await client.post(f"/api/sessions/conv-1/messages/{user_id}/feedback", json={"rating": "up"})
    bad_rating = await client.post(f"/api/sessions/conv-1/messages/{answer_id}/feedback", json={"rating": "meh"})
    assert (on_question.status_code, on_question.json()["code"]) == (404, "message_not_found")
    assert bad_rating.status_code == 422


async def test_feedback_and_renames_stay_inside_the_principal(client_factory: ClientFactory) -> None:
    async with client_factory(Settings(auth="api-key", api_keys=KEYS)) as client:
        await upload(client, "conv-1", ("lease.txt", LEASE), headers=ALICE)
        await ask(client, "What is the rent?", headers=ALICE)

        feedback = await client.post(
            "/api/sessions/conv-1/messages/msg-1-assistant/feedback", json={"rating": "down"}, headers=BOB
        )
        rename = await client.patch("/api/sessions/conv-1", json={"title": "mine now"}, headers=BOB)
        export = await client.get("/api/sessions/conv-1/export?format=json", headers=BOB)

        assert [feedback.status_code, rename.status_code, export.status_code] == [404, 404, 404]
        history = (await client.get("/api/sessions/conv-1", headers=ALICE)).json()
        assert history["title"] == "Rent" and history["messages"][1]["feedback"] is None


async def test_a_twenty_turn_conversation_exports_as_markdown_json_and_pdf_with_footnotes(
    client: httpx.AsyncClient,
) -> None:
    await upload(client, "conv-1", ("lease.txt", LEASE))
    for number in range(20):
        await ask(client, f"How much notice is needed to end the lease? ({number})")
    await client.post("/api/sessions/conv-1/messages/msg-3-assistant/feedback", json={"rating": "up", "comment": "ok"})

    markdown = await client.get("/api/sessions/conv-1/export?format=markdown")
    as_json = await client.get("/api/sessions/conv-1/export?format=json")
    pdf = await client.get("/api/sessions/conv-1/export", params={"format": "pdf"})

    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.headers["content-disposition"].startswith('attachment; filename="')
    text = markdown.text
    assert text.count("**orc**") == 20 and "[^1]" in text and "[^20]:" in text
    assert "60 days" in text.split("[^1]:")[1] and "Feedback: helpful: ok" in text
    document = json.loads(as_json.content)
    assert len(document["messages"]) == 40 and document["messages"][5]["feedback"]["rating"] == "up"
    assert pdf.headers["content-type"] == "application/pdf"
    pages = PdfReader(io.BytesIO(pdf.content)).pages
    extracted = "".join(page.extract_text() for page in pages)
    assert len(pages) > 1 and "60 days" in extracted and "Sources" in extracted


async def test_an_unknown_export_format_is_refused(client: httpx.AsyncClient) -> None:
    await upload(client, "conv-1", ("lease.txt", LEASE))
    await ask(client, "What is the rent?")

    response = await client.get("/api/sessions/conv-1/export?format=docx")

    assert response.status_code == 422 and response.json()["code"] == "validation_error"


async def test_every_answer_carries_the_id_and_time_it_is_stored_with(client: httpx.AsyncClient) -> None:
    await upload(client, "conv-1", ("lease.txt", LEASE))
    first = await ask(client, "What is the rent?")
    second = await ask(client, "What is the notice period?")

    history = (await client.get("/api/sessions/conv-1")).json()["messages"]
    assert [first["message_id"], second["message_id"]] == ["msg-1-assistant", "msg-2-assistant"]
    assert [first["created_at"], second["created_at"]] == [history[1]["created_at"], history[3]["created_at"]]


async def test_a_request_may_choose_a_model_from_the_allow_list_and_nothing_else(
    client_factory: ClientFactory,
) -> None:
    async with client_factory(
        Settings(models={"fast": "offline"}), model=FunctionChatModel(cite_first_source)
    ) as client:
        await upload(client, "conv-1", ("lease.txt", LEASE))
        default = await ask(client, "What is the rent?")
        fast = await ask(client, "What is the rent?", model="fast")
        refused = await client.post(
            "/api/orc", json={"question": "Rent?", "conversation_id": "conv-1", "model": "gpt-x"}
        )
        history = (await client.get("/api/sessions/conv-1")).json()["messages"]

    assert default["metadata"]["model"] != fast["metadata"]["model"] == "orc-offline-extractive (offline)"
    assert (refused.status_code, refused.json()["code"]) == (400, "model_not_allowed")
    assert "fast" in refused.json()["detail"]
    assert [m["model"] for m in history if m["role"] == "assistant"] == [
        default["metadata"]["model"],
        fast["metadata"]["model"],
    ]


async def test_the_question_keeps_the_time_it_was_asked_and_the_answer_the_time_it_was_written() -> None:
    answering: list[str] = []

    def answer(messages: list[Any], tools: list[dict[str, Any]]) -> str:
        answering.append(utc_now())
        return "Hello."

    async with open_client(Settings(), model=FunctionChatModel(answer)) as client:
        await client.post("/api/orc", json={"question": "Hi?", "conversation_id": "timed"})
        messages = (await client.get("/api/sessions/timed")).json()["messages"]

    asked, answered = messages[0]["created_at"], messages[1]["created_at"]
    assert asked <= answering[0] <= answered and asked < answered
