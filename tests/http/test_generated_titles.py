"""Generated titles: a real model names a conversation after its first answer, in the background, never replacing a
title the user chose; the offline model keeps the title made from the question."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import PrivateAttr

from orc.composition import Services, build_runtime
from orc.conversations.title_writer import TitleWriter, generated_title
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


class OverlapCountingModel(FunctionChatModel):
    """A titling model that also counts how many title requests were under way at once."""

    titles_in_flight: int = 0
    most_titles_in_flight: int = 0

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        titling = "Name this conversation" in messages[0].text
        if titling:
            self.titles_in_flight += 1
            self.most_titles_in_flight = max(self.most_titles_in_flight, self.titles_in_flight)
        try:
            return await super()._agenerate(messages, *args, **kwargs)
        finally:
            if titling:
                self.titles_in_flight -= 1


async def test_a_burst_of_new_conversations_leaves_its_titles_waiting_behind_a_few_title_requests() -> None:
    titling = TitlingModel()
    # Each request takes 20 ms, so the titles of eight conversations started at once would all overlap.
    model = OverlapCountingModel(titling.reply, latency=0.02)
    async with runtime(model) as orc:
        asks = [TurnRequest(question="What is the rent?", conversation_id=f"c{n}") for n in range(8)]
        await asyncio.gather(*(orc.orchestrator.ask(request) for request in asks))
        await orc.orchestrator.settle()
        summaries = await orc.foundation.sessions.summaries(LOCAL_PRINCIPAL)

    assert titling.title_requests == 8
    assert model.most_titles_in_flight == 2
    assert {summary.title for summary in summaries} == {"Lease rent and deposit"}


async def test_a_title_is_not_asked_for_while_too_many_titles_wait() -> None:
    titling = TitlingModel()
    async with runtime(FunctionChatModel(titling.reply, latency=0.01)) as orc:
        writer = TitleWriter(orc.foundation.conversations, concurrency=1, max_waiting=1)
        for n in range(3):
            writer.schedule(FunctionChatModel(titling.reply), LOCAL_PRINCIPAL, f"c{n}", "What is the rent?", "Unknown.")
        await writer.settle()

    assert titling.title_requests == 2  # one under way, one waiting; the third keeps its question's title


class GatedTitlesModel(FunctionChatModel):
    """Answers at once; a title request waits until ``release`` is set (``reached`` is set when one arrives)."""

    _reached: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)
    _release: asyncio.Event = PrivateAttr(default_factory=asyncio.Event)

    async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        if "Name this conversation" in messages[0].text:
            self._reached.set()
            await self._release.wait()
        return await super()._agenerate(messages, *args, **kwargs)


async def test_closing_lets_the_title_under_way_finish_and_gives_up_those_still_waiting() -> None:
    titling = TitlingModel()
    model = GatedTitlesModel(titling.reply)
    async with runtime(FunctionChatModel(titling.reply), Settings(generated_titles=False)) as orc:
        for n in range(3):
            await orc.orchestrator.ask(TurnRequest(question="What is the rent?", conversation_id=f"c{n}"))
        writer = TitleWriter(orc.foundation.conversations, concurrency=1)
        for n in range(3):
            writer.schedule(model, LOCAL_PRINCIPAL, f"c{n}", "What is the rent?", "Unknown.")
        await model._reached.wait()  # c0's title is under way, c1's and c2's wait
        closing = asyncio.create_task(writer.aclose())
        await asyncio.sleep(0)  # one step of the loop: aclose marks the writer closed
        model._release.set()
        await closing
        writer.schedule(model, LOCAL_PRINCIPAL, "c1", "What is the rent?", "Unknown.")  # closed: not asked
        await writer.settle()
        titles = {s.conversation_id: s.title for s in await orc.foundation.sessions.summaries(LOCAL_PRINCIPAL)}

    assert titling.title_requests == 1
    assert titles == {"c0": "Lease rent and deposit", "c1": "Rent", "c2": "Rent"}


def test_a_models_reply_becomes_a_clean_short_title() -> None:
    assert generated_title('Title: "Notice period of the lease."\nMore text') == "Notice period of the lease"
    assert generated_title("**Rent**") == "Rent"
    assert generated_title("A title " * 12) == ("A title " * 12).strip()  # stored whole, however a list shows it
    assert len(generated_title("word " * 60)) <= 200 and generated_title("word " * 60).endswith("word…")
    assert generated_title("\n\n") == ""
