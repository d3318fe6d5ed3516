"""Greetings, thanks and goodbyes are answered as a person would; a question that opens with one is still a question."""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from orc.contracts import SourceSpan
from orc.models.offline import OfflineExtractiveModel
from orc.models.small_talk import small_talk, small_talk_reply
from tests.models.corpus import answer_prompt, cited_refs

LEASE = [
    SourceSpan(
        ref="lease.txt::S1",
        document="lease.txt",
        span_id="S1",
        text="Hello and welcome to your lease. The notice period is 60 days.",
    )
]
SEARCH_TOOL = {"type": "function", "function": {"name": "documents__search", "parameters": {"type": "object"}}}


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("Hello, thanks!", "thanks"),
        ("hi", "greeting"),
        ("Good morning!", "greeting"),
        ("Hello?", "greeting"),
        ("Thank you so much, that was really helpful", "thanks"),
        ("Thanks for the summary!", "thanks"),
        ("great, thanks", "thanks"),
        ("ok", "acknowledgement"),
        ("ok, bye", "farewell"),
        ("How are you?", "wellbeing"),
    ],
)
def test_small_talk_is_recognised_by_what_it_does(message: str, kind: str) -> None:
    assert small_talk(message) == kind


@pytest.mark.parametrize(
    "message",
    [
        "Hi, what is the notice period?",
        "Thanks! And can I sublet?",
        "Thanks for the summary, what is the rent",
        "Hello, summarize the lease",
        "is it ok to keep a cat?",
        "What does hello mean in the protocol?",
        "bye-laws of the association",
        "",
    ],
)
def test_a_message_that_asks_anything_is_not_small_talk(message: str) -> None:
    assert small_talk(message) is None


def test_hello_thanks_gets_a_welcome_and_no_citation_instead_of_could_not_find() -> None:
    reply = OfflineExtractiveModel().respond([SystemMessage(answer_prompt(LEASE)), HumanMessage("Hello, thanks!")])

    assert reply.text == small_talk_reply("Hello, thanks!")
    assert reply.text.startswith("You're welcome")
    assert cited_refs(reply.text) == []


def test_a_greeting_plans_no_tool_even_when_tools_are_offered() -> None:
    reply = OfflineExtractiveModel().respond(
        [SystemMessage("Plan the tools."), HumanMessage("Hi there")], tools=[SEARCH_TOOL]
    )

    assert reply.tool_calls == [] and reply.text == ""


def test_without_any_document_a_greeting_is_still_greeted() -> None:
    reply = OfflineExtractiveModel().respond([HumanMessage("Hello!")])

    assert reply.text.startswith("Hello!")


def test_a_question_that_opens_with_a_greeting_is_answered_from_the_documents() -> None:
    reply = OfflineExtractiveModel().respond(
        [SystemMessage(answer_prompt(LEASE)), HumanMessage("Hi, what is the notice period?")]
    )

    assert cited_refs(reply.text) == ["lease.txt::S1"]
    assert "60 days" in reply.text
