"""Follow-up questions made standalone without a model call: the deterministic rewrite, and the offline model
resolving a follow-up from the history it is given as messages."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from orc.contracts import SourceSpan
from orc.models.offline import OfflineExtractiveModel
from orc.models.passages import Source
from orc.models.prompting import format_sources
from orc.models.rewriting import rewrite_follow_up, split_context


def rewrite(follow_up: str, *turns: tuple[str, str]) -> str:
    return rewrite_follow_up(follow_up, list(turns))


PREVIOUS = (("user", "What is the notice period in the lease?"), ("assistant", "60 days [lease.pdf::S2]."))


def test_a_what_about_follow_up_gets_the_previous_questions_key_words_then_the_words_its_answer_cited() -> None:
    assert rewrite("What about the termination fee?", *PREVIOUS) == (
        "What about the termination fee? (context: notice period lease days)"
    )


def test_the_most_repeated_words_of_the_cited_sentences_come_first_and_an_uncited_answer_adds_none() -> None:
    cited = (
        ("user", "Who looks after the Mozilla licence?"),
        (
            "assistant",
            "Mozilla Foundation is the license steward. [mpl.txt::S21] The steward may publish. [mpl.txt::S22]",
        ),
    )
    refused = (("user", "Who looks after the Mozilla licence?"), ("assistant", "I couldn't find an answer to that."))

    assert rewrite("Can anyone else change it?", *cited) == (
        "Can anyone else change it? (context: looks Mozilla licence steward Foundation license publish)"
    )
    assert (
        rewrite("Can anyone else change it?", *refused) == "Can anyone else change it? (context: looks Mozilla licence)"
    )


@pytest.mark.parametrize("follow_up", ["Can you give an example?", "Is there a later version I could use?"])
def test_asking_for_an_example_or_a_later_version_counts_as_a_follow_up(follow_up: str) -> None:
    assert split_context(rewrite(follow_up, *PREVIOUS))[1] != []


@pytest.mark.parametrize("follow_up", ["Does it renew automatically?", "And for the tenant?", "Why?"])
def test_pronouns_and_very_short_messages_count_as_follow_ups(follow_up: str) -> None:
    rewritten = rewrite(follow_up, *PREVIOUS)

    assert rewritten.startswith(follow_up)
    assert split_context(rewritten)[1] != []


@pytest.mark.parametrize(
    "follow_up", ["And how do I get rid of one much earlier?", "But what happens with the deposit then?"]
)
def test_a_longer_message_that_continues_the_exchange_counts_as_a_follow_up(follow_up: str) -> None:
    assert split_context(rewrite(follow_up, *PREVIOUS))[1] == ["notice", "period", "lease", "days"]


def test_a_standalone_question_is_returned_unchanged() -> None:
    question = "How many days of annual leave do full-time employees get?"

    assert rewrite(question, *PREVIOUS) == question


def test_without_a_previous_user_question_the_message_is_unchanged() -> None:
    assert rewrite("What about it?", ("assistant", "Hello!")) == "What about it?"


def test_the_latest_previous_user_question_supplies_the_context() -> None:
    turns = (*PREVIOUS, ("user", "How much is the security deposit?"), ("assistant", "$2,000."))

    assert rewrite("When is it returned?", *turns) == "When is it returned? (context: security deposit)"


def test_the_context_suffix_splits_off_cleanly() -> None:
    assert split_context("What about the fee? (context: notice period)") == (
        "What about the fee?",
        ["notice", "period"],
    )
    assert split_context("Plain question?") == ("Plain question?", [])


def span(number: int, text: str) -> SourceSpan:
    return SourceSpan(ref=f"lease.txt::S{number}", document="lease.txt", span_id=f"S{number}", text=text)


LEASE = [
    span(1, "The parking space costs $90 a month."),
    span(2, "Key deposit: $20."),
    span(3, "Pet deposit: $300."),
    span(4, "Storage deposit: $50."),
    span(5, "For the parking space in the basement garage a separate deposit of $100 is due."),
]


async def test_the_offline_model_resolves_a_follow_up_from_the_history_messages_in_one_call() -> None:
    system = SystemMessage(f"<sources>\n{format_sources(LEASE)}\n</sources>")
    history = [HumanMessage("What does the parking space cost?"), AIMessage("$90 a month [lease.txt::S2].")]
    model = OfflineExtractiveModel()

    alone = await model.ainvoke([system, HumanMessage("And the deposit?")])
    followed = await model.ainvoke([system, *history, HumanMessage("And the deposit?")])

    assert "[lease.txt::S5]" in followed.text
    assert followed.text != alone.text


async def test_a_follow_up_reaches_the_answering_step_made_standalone_with_its_sources() -> None:
    asked: list[tuple[str, list[str]]] = []

    class Noting(OfflineExtractiveModel):
        def answer(self, question: str, sources: Sequence[Source]) -> str:
            asked.append((question, [source.ref for source in sources]))
            return super().answer(question, sources)

    system = SystemMessage(f"<sources>\n{format_sources(LEASE)}\n</sources>")
    history = [HumanMessage("What does the parking space cost?"), AIMessage("$90 a month [lease.txt::S2].")]

    reply = await Noting().ainvoke([system, *history, HumanMessage("And the deposit?")])

    [(question, refs)] = asked
    assert question.startswith("And the deposit?") and "parking" in question
    assert refs == [span.ref for span in LEASE]
    assert "[lease.txt::S5]" in reply.text
