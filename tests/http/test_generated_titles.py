"""Generated titles: a real model names a conversation after its first answer, in the background, never replacing a
title the user chose; the offline model keeps the title made from the question."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from orc.composition import Services, build_runtime
from orc.conversations.title_writer import generated_title
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.testing import FunctionChatModel, ScriptedChatModel
from orc.turns import TurnRequest
from tests.documents.library_support import memory_stores


@asynccontextmanager
async def runtime(model: BaseChatModel | None = None, settings: Settings | None = None) -> AsyncIterator[Services]:
    async with build_runtime(settings or Settings(generated_titles=True), model=model, stores=memory_stores()) as built:
        yield built


class TitlingModel:
    """Answers every question the same way, and counts the title requests."""

    def __init__(self) -> None:
        self.title_requests = 0

    def reply(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> str:
        if "Name this conversation" in messages[0].text:
            self.title_requests += 1
            return '"Lease rent and deposit."'
        return "The documents do not say."


async def test_a_real_model_titles_the_conversation_after_its_first_answer_off_the_critical_path() -> None:
    titling = TitlingModel()
    async with runtime(FunctionChatModel(titling.reply)) as orc:
        first = await orc.orchestrator.ask(TurnRequest(question="what is the rent of the flat?", conversation_id="c1"))
        await orc.orchestrator.settle()
        await orc.orchestrator.ask(TurnRequest(question="and the deposit?", conversation_id="c1"))
        await orc.orchestrator.settle()
        (summary,) = await orc.foundation.sessions.summaries(LOCAL_PRINCIPAL)

    assert first.metadata.model_calls == 1  # the title request is not part of the turn
    assert summary.title == "Lease rent and deposit"
    assert titling.title_requests == 1  # only the first exchange is titled


async def test_a_title_the_user_chose_is_never_replaced_by_a_generated_one() -> None:
    # The title request takes 50 ms: the user renames the conversation while it is under way.
    model = ScriptedChatModel(["The documents do not say.", "Generated title"], latency=0.05)
    async with runtime(model) as orc:
        await orc.orchestrator.ask(TurnRequest(question="What is the rent?", conversation_id="c1"))
        await orc.foundation.sessions.rename(LOCAL_PRINCIPAL, "c1", "My lease")
        await orc.orchestrator.settle()
        (summary,) = await orc.foundation.sessions.summaries(LOCAL_PRINCIPAL)

    assert model.remaining == 0  # the title was generated...
    assert summary.title == "My lease"  # ...and did not replace the user's


async def test_the_offline_model_keeps_the_title_made_from_the_question() -> None:
    async with runtime() as orc:
        answered = await orc.orchestrator.ask(TurnRequest(question="What is the monthly rent?", conversation_id="c1"))
        await orc.orchestrator.settle()
        (summary,) = await orc.foundation.sessions.summaries(LOCAL_PRINCIPAL)

    assert summary.title == "Monthly rent"
    assert answered.metadata.model_calls == 1


async def test_generated_titles_can_be_switched_off() -> None:
    titling = TitlingModel()
    async with runtime(FunctionChatModel(titling.reply), Settings(generated_titles=False)) as orc:
        await orc.orchestrator.ask(TurnRequest(question="What is the monthly rent?", conversation_id="c1"))
        await orc.orchestrator.settle()
        (summary,) = await orc.foundation.sessions.summaries(LOCAL_PRINCIPAL)

    assert titling.title_requests == 0 and summary.title == "Monthly rent"


def test_a_models_reply_becomes_a_clean_short_title() -> None:
    assert generated_title('Title: "Notice period of the lease."\nMore text') == "Notice period of the lease"
    assert generated_title("**Rent**") == "Rent"
    assert len(generated_title("word " * 40)) <= 61
    assert generated_title("\n\n") == ""
