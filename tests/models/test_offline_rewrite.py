"""The offline model making follow-up questions standalone, from the rewrite prompt's history block."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from orc.models.offline import OfflineExtractiveModel
from orc.models.prompting import format_history, load_prompt
from orc.models.rewriting import split_context


async def rewrite(follow_up: str, *turns: tuple[str, str]) -> str:
    history = format_history({"role": role, "content": content} for role, content in turns)
    system = load_prompt("rewrite.system").render(history=history)
    reply = await OfflineExtractiveModel().ainvoke([SystemMessage(system), HumanMessage(follow_up)])
    return reply.text


PREVIOUS = (("user", "What is the notice period in the lease?"), ("assistant", "60 days [lease.pdf::S2]."))


async def test_a_what_about_follow_up_gets_the_previous_questions_key_words() -> None:
    assert await rewrite("What about the termination fee?", *PREVIOUS) == (
        "What about the termination fee? (context: notice period lease)"
    )


@pytest.mark.parametrize("follow_up", ["Does it renew automatically?", "And for the tenant?", "Why?"])
async def test_pronouns_and_very_short_messages_count_as_follow_ups(follow_up: str) -> None:
    rewritten = await rewrite(follow_up, *PREVIOUS)

    assert rewritten.startswith(follow_up)
    assert split_context(rewritten)[1] != []


async def test_a_standalone_question_is_returned_unchanged() -> None:
    question = "How many days of annual leave do full-time employees get?"

    assert await rewrite(question, *PREVIOUS) == question


async def test_without_a_previous_user_question_the_message_is_unchanged() -> None:
    assert await rewrite("What about it?", ("assistant", "Hello!")) == "What about it?"


async def test_the_latest_previous_user_question_supplies_the_context() -> None:
    turns = (*PREVIOUS, ("user", "How much is the security deposit?"), ("assistant", "$2,000."))

    assert await rewrite("When is it returned?", *turns) == "When is it returned? (context: security deposit)"


def test_the_context_suffix_splits_off_cleanly() -> None:
    assert split_context("What about the fee? (context: notice period)") == (
        "What about the fee?",
        ["notice", "period"],
    )
    assert split_context("Plain question?") == ("Plain question?", [])
