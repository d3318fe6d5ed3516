"""Grounding enforced in code, attachments that cannot be used, and follow-up suggestions (the chat product issue).

Over HTTP (JSON and NDJSON) with scripted models: a marker naming no retrieved span never reaches the client, an
answer that is mostly uncited is asked for once more (real models only), a failed attachment is named in the
answer and in ``metadata.unavailable_documents``, and every answer carries suggestions grounded in its sources.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from langchain_core.messages import BaseMessage, HumanMessage

from orc.testing import FunctionChatModel, ScriptedChatModel
from tests.documents.doubles import citing_model
from tests.http.conftest import ClientFactory, settled, upload

LEASE = (
    b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first day of each month.\n\n"
    b"The deposit is two months of rent and is returned within 30 days of the end of the lease.\n\n"
    b"Pets are allowed with the landlord's written consent."
)


def refs_in_prompt(messages: list[BaseMessage]) -> list[str]:
    system = messages[0].text
    return [part.split('"')[0] for part in system.split('<source ref="')[1:]]


def body(question: str, *names: str) -> dict[str, Any]:
    return {"question": question, "conversation_id": "c1", "blob_names": list(names or ["lease.txt"])}


async def test_made_up_markers_are_removed_from_the_text_streamed_and_stored(client_factory: ClientFactory) -> None:
    def hallucinate(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> str:
        real = refs_in_prompt(messages)[0]
        return f"The rent is 1,450 euros [{real}]. It rises yearly [lease.txt::S99]. Parking is free [made-up.pdf::S1]."

    async with client_factory(model=FunctionChatModel(hallucinate)) as client:
        await upload(client, "c1", ("lease.txt", LEASE))
        answered = (await client.post("/api/orc", json=body("What is the rent?"))).json()
        streamed = await client.post(
            "/api/orc", json=body("What is the rent?"), headers={"Accept": "application/x-ndjson"}
        )
        history = (await client.get("/api/sessions/c1")).json()["messages"]

    for text in (answered["answer"], history[1]["content"]):
        assert "S99" not in text and "made-up.pdf" not in text and "lease.txt::S" in text
    events = [json.loads(line) for line in streamed.text.splitlines()]
    tokens = "".join(event["text"] for event in events if event["type"] == "token")
    assert "S99" not in tokens and "made-up" not in tokens  # never sent, not even for a moment
    final = events[-1]
    assert final["answer"] == tokens
    assert answered["metadata"]["grounding"] == {
        "cited_sentences": 1,
        "uncited_sentences": 2,
        "removed_markers": 2,
        "corrective_retry": True,  # mostly uncited once the made-up markers are gone
    }


async def test_a_mostly_uncited_answer_gets_one_corrective_retry_and_a_cited_one_none(
    client_factory: ClientFactory,
) -> None:
    def answer(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> str:
        real = refs_in_prompt(messages)[0]
        if "Rewrite the answer" in messages[-1].text:
            return f"The rent is 1,450 euros a month [{real}]."
        if "deposit" in messages[-1].text:
            return f"The deposit is two months of rent [{real}]."
        return "The rent is 1,450 euros a month. It is paid monthly."

    model = FunctionChatModel(answer)
    async with client_factory(model=model) as client:
        await upload(client, "c1", ("lease.txt", LEASE))
        retried = (await client.post("/api/orc", json=body("What is the rent?"))).json()
        grounded = (await client.post("/api/orc", json=body("What is the deposit?"))).json()

    assert retried["answer"].startswith("The rent is 1,450 euros a month [lease.txt::")
    assert retried["metadata"]["grounding"]["corrective_retry"] is True
    assert retried["metadata"]["model_calls"] == 2  # the answer and its one retry, both counted
    assert grounded["metadata"]["grounding"]["corrective_retry"] is False
    assert grounded["metadata"]["model_calls"] == 1  # a well-grounded answer waits for nothing more


async def test_the_offline_model_never_gets_a_corrective_retry(client: httpx.AsyncClient) -> None:
    await upload(client, "c1", ("lease.txt", LEASE))

    answered = (await client.post("/api/orc", json=body("What is the monthly rent?"))).json()

    assert "1,450" in answered["answer"]
    assert answered["metadata"]["model_calls"] == 1
    assert answered["metadata"]["grounding"]["corrective_retry"] is False
    assert answered["metadata"]["grounding"]["cited_sentences"] >= 1


async def test_a_failed_attachment_is_named_in_the_answer_and_in_its_metadata(client: httpx.AsyncClient) -> None:
    await upload(client, "c1", ("lease.txt", LEASE), ("scan.pdf", b"%PDF-1.4 this is not a real pdf"))
    manifest = await settled(client, "c1")
    assert {f["filename"]: f["status"] for f in manifest["files"]}["scan.pdf"] == "failed"

    response = await client.post("/api/orc", json=body("What is the monthly rent?", "lease.txt", "scan.pdf"))

    assert response.status_code == 200, response.text
    answered = response.json()
    assert "1,450" in answered["answer"]  # the usable file still answers
    assert "Not used in this answer: scan.pdf (processing failed" in answered["answer"]
    (unavailable,) = answered["metadata"]["unavailable_documents"]
    assert unavailable["name"] == "scan.pdf" and unavailable["status"] == "failed" and unavailable["reason"]
    assert unavailable["document_id"] == {f["filename"]: f["file_id"] for f in manifest["files"]}["scan.pdf"]


async def test_when_the_only_attachment_failed_the_answer_says_so(client: httpx.AsyncClient) -> None:
    await upload(client, "c1", ("scan.pdf", b"%PDF-1.4 this is not a real pdf"))
    await settled(client, "c1")

    answered = (await client.post("/api/orc", json=body("What is the rent?", "scan.pdf"))).json()

    assert "scan.pdf (processing failed" in answered["answer"]
    assert [d["name"] for d in answered["metadata"]["unavailable_documents"]] == ["scan.pdf"]


async def test_answers_suggest_up_to_three_follow_ups_from_the_retrieved_spans(client: httpx.AsyncClient) -> None:
    await upload(client, "c1", ("lease.txt", LEASE))

    answered = (await client.post("/api/orc", json=body("What is the monthly rent?"))).json()
    streamed = await client.post(
        "/api/orc", json=body("What is the monthly rent?"), headers={"Accept": "application/x-ndjson"}
    )

    suggestions = answered["suggestions"]
    assert 1 <= len(suggestions) <= 3
    assert all(s.endswith("?") for s in suggestions), suggestions
    assert "Are pets allowed?" in suggestions  # asked as a person asks, from a sentence the answer did not use
    assert not any("rent" in s for s in suggestions)  # not the question asked again
    final = json.loads(streamed.text.splitlines()[-1])
    assert final["type"] == "final" and final["suggestions"] == suggestions
    assert answered["metadata"]["model_calls"] == 1  # no model request made them


async def test_a_script_without_real_markers_in_a_follow_up_keeps_nothing_made_up(
    client_factory: ClientFactory,
) -> None:
    model = ScriptedChatModel(["Nothing here [lease.txt::S1234]."])
    async with client_factory(model=model) as client:
        await upload(client, "c1", ("lease.txt", LEASE))
        answered = (await client.post("/api/orc", json=body("What is the rent?"))).json()

    assert answered["answer"].strip() == "Nothing here."
    assert answered["citations"] == []
    assert isinstance(model.requests[0].messages[-1], HumanMessage)


LONG_LEASE = "\n\n".join(
    [
        "Residential lease. " + "The tenant keeps the flat clean and in good repair. " * 14,
        "Rent. " + "The monthly rent is 1,450 euros, payable on the first day of each month. " * 10,
        "Deposit. The deposit is two months of rent. It is returned within 30 days of the end of the lease. "
        + "The landlord lists any deductions in writing. " * 12,
    ]
).encode()


async def test_weak_evidence_is_retrieved_once_more_in_the_documents_own_words(
    client_factory: ClientFactory,
) -> None:
    async with client_factory(model=citing_model()) as client:
        await upload(client, "c1", ("lease.txt", LONG_LEASE))
        misspelt = (await client.post("/api/orc", json=body("When is the depositt returnd?"))).json()
        plain = (await client.post("/api/orc", json=body("When is the deposit returned?"))).json()

    assert misspelt["metadata"]["retrieval_rounds"] == 2
    assert plain["metadata"]["retrieval_rounds"] == 1
    # The second round found the deposit clause, as the correctly spelt question does.
    assert "30 days" in misspelt["citations"][0]["quote"]
    assert misspelt["citations"][0]["ref"] == plain["citations"][0]["ref"]
    assert misspelt["metadata"]["model_calls"] == plain["metadata"]["model_calls"] == 1  # no model was asked


async def test_a_real_model_writes_its_own_follow_ups_which_never_reach_the_answer(
    client_factory: ClientFactory,
) -> None:
    def answer(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> str:
        real = refs_in_prompt(messages)[0]
        return (
            f"The monthly rent is 1,450 euros [{real}].\n<follow_ups>\n- When is the rent due?\n"
            "- Can I keep a cat?\n</follow_ups>"
        )

    async with client_factory(model=FunctionChatModel(answer)) as client:
        await upload(client, "c1", ("lease.txt", LEASE))
        answered = (await client.post("/api/orc", json=body("What is the rent?"))).json()
        streamed = await client.post(
            "/api/orc", json=body("What is the rent?"), headers={"Accept": "application/x-ndjson"}
        )
        history = (await client.get("/api/sessions/c1")).json()["messages"]

    assert answered["suggestions"] == ["When is the rent due?", "Can I keep a cat?"]
    events = [json.loads(line) for line in streamed.text.splitlines()]
    tokens = "".join(event["text"] for event in events if event["type"] == "token")
    for text in (answered["answer"], tokens, history[1]["content"], history[3]["content"]):
        assert "follow_ups" not in text and "cat" not in text and "1,450 euros" in text
    assert events[-1]["suggestions"] == answered["suggestions"]
    assert answered["metadata"]["model_calls"] == 1  # written in the answer's own request
