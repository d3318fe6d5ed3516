"""The answer request: one call per document turn, carrying the recent history as messages under its budgets."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from orc.composition import Services, build_runtime
from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.testing import FunctionChatModel
from orc.turns import TurnRequest, TurnResult
from tests.graph.test_document_chat_workflow import cite_first_source

LEASE = (
    b"The monthly rent is 900 euros.\n\nThe notice period is 60 days.\n\n"
    b"Parking: the first space costs 40 euros, the second one costs 55 euros."
)


@pytest.fixture
def model() -> FunctionChatModel:
    return FunctionChatModel(cite_first_source)


async def runtime_with_lease(model: FunctionChatModel | None, settings: Settings) -> AsyncIterator[Services]:
    async with build_runtime(settings, model=model) as orc:
        await orc.foundation.session_files.add(LOCAL_PRINCIPAL, "conv", [Upload("lease.txt", LEASE)])
        # The session digest joins the answer prompt once it is made: made first, every turn sees the same prompt.
        assert await orc.documents.digests.wait_idle(LOCAL_PRINCIPAL, "conv", 120)
        yield orc


@pytest.fixture
async def orchestrator(model: FunctionChatModel) -> AsyncIterator[Services]:
    async for orc in runtime_with_lease(model, Settings()):
        yield orc


async def ask(orc: Services, question: str) -> TurnResult:
    return await orc.orchestrator.ask(TurnRequest(question=question, conversation_id="conv", blob_names=["lease.txt"]))


async def test_a_follow_up_makes_exactly_one_model_call(orchestrator: Services, model: FunctionChatModel) -> None:
    await ask(orchestrator, "What does the first parking space cost?")
    before = model.calls

    follow_up = await ask(orchestrator, "and the second one?")

    assert model.calls - before == follow_up.metadata.model_calls == 1
    (call,) = follow_up.metadata.tool_calls
    assert call.arguments["mode"] == "evidence"
    # Retrieval looks for the question together with what the conversation is about.
    assert "parking" in call.arguments["question"]


async def test_the_answer_request_carries_system_history_pairs_then_the_question(
    orchestrator: Services, model: FunctionChatModel
) -> None:
    first = await ask(orchestrator, "What does the first parking space cost?")
    await ask(orchestrator, "and the second one?")

    messages = model.requests[-1].messages
    assert [type(message) for message in messages] == [SystemMessage, HumanMessage, AIMessage, HumanMessage]
    assert messages[1].text == "What does the first parking space cost?"
    assert messages[2].text == first.answer
    assert messages[3].text == "and the second one?"


async def test_the_previous_answers_cited_spans_stay_evidence_for_the_follow_up(
    orchestrator: Services, model: FunctionChatModel
) -> None:
    first = await ask(orchestrator, "What does the first parking space cost?")
    await ask(orchestrator, "and the notice?")

    system = model.requests[-1].messages[0].text
    assert all(f'ref="{citation.ref}"' in system for citation in first.citations)


async def test_old_turns_are_shortened_then_dropped_to_fit_the_history_budget(model: FunctionChatModel) -> None:
    settings = Settings(history_tokens=700)
    async for orc in runtime_with_lease(model, settings):
        long_question = "What does the first parking space cost? " + "Please be precise. " * 60
        for _ in range(4):
            await ask(orc, long_question)
        await ask(orc, "and the second one?")

    history = model.requests[-1].messages[1:-1]
    # Four turns of history did not fit: the oldest went first, older questions were shortened, the latest kept.
    assert 0 < len(history) < 8 and len(history) % 2 == 0
    assert history[-2].text == long_question.strip()
    assert sum(len(message.text) for message in history) <= 700 * 4
    assert any(message.text.endswith("…") for message in history)


async def test_input_tokens_stay_flat_from_turn_10_to_turn_50(orchestrator: Services) -> None:
    tokens: dict[int, int] = {}
    for turn in range(1, 51):
        result = await ask(orchestrator, f"What does parking space number {turn} cost?")
        tokens[turn] = result.metadata.usage.input_tokens

    assert tokens[10] > tokens[1]
    assert abs(tokens[50] - tokens[10]) <= 0.1 * tokens[10]


async def test_the_offline_model_answers_an_elliptical_follow_up_from_the_history() -> None:
    async for orc in runtime_with_lease(None, Settings()):
        await ask(orc, "How long is the notice period?")
        follow_up = await ask(orc, "and the rent?")

    assert follow_up.metadata.model_calls == 1
    assert "900 euros" in follow_up.answer
    assert [citation.ref for citation in follow_up.citations] == ["lease.txt::S1"]


async def test_the_retrieval_question_of_a_follow_up_carries_the_words_the_previous_answer_cited(
    orchestrator: Services,
) -> None:
    await ask(orchestrator, "What does the first parking space cost?")

    follow_up = await ask(orchestrator, "Is that refundable?")

    (call,) = follow_up.metadata.tool_calls
    # The previous question says "parking"; the span the answer cited says what it cost, in euros.
    assert "parking" in call.arguments["question"]
    assert "euros" in call.arguments["question"]


async def test_the_sources_of_the_answer_prompt_are_cut_to_the_sources_budget() -> None:
    clauses = [
        f"Clause {n}. The tenant pays {n}00 euros for item {n}. " + "The terms apply in full. " * 16 for n in range(8)
    ]
    shown: dict[int, int] = {}
    for budget in (Settings().sources_tokens, 200):
        model = FunctionChatModel(cite_first_source)
        async with build_runtime(Settings(sources_tokens=budget), model=model) as orc:
            await orc.foundation.session_files.add(
                LOCAL_PRINCIPAL, "conv", [Upload("terms.txt", "\n\n".join(clauses).encode())]
            )
            await orc.orchestrator.ask(
                TurnRequest(question="What does the tenant pay?", conversation_id="conv", blob_names=["terms.txt"])
            )
        shown[budget] = model.requests[-1].messages[0].text.count('ref="terms.txt::')

    assert 0 < shown[200] < shown[Settings().sources_tokens]
