"""The needs analyzer before any tool ran: a question with nothing to answer from asks, saying what is missing;
one naming a file the conversation lacks asks for that file; small talk and a turn with documents do not ask."""

from __future__ import annotations

from orc.contracts import SourceSpan
from orc.graph.context_needs import needed_before_tools, needed_context
from orc.graph.state import ListedDocument

HANDBOOK = ListedDocument(
    filename="handbook.pdf",
    context_type="folder",
    context_id="hr",
    status="ready",
    origin="focus",
    document_id="d1",
)


def test_a_question_with_no_document_anywhere_asks_for_one_before_any_tool_runs() -> None:
    (slot,) = needed_before_tools("What is the notice period of my lease?", [], [], [])

    assert (slot.slot, slot.kind, slot.phase, slot.artifact_type) == (
        "documents",
        "document",
        "before_tools",
        "document",
    )
    assert "no documents to answer from" in slot.description


def test_a_named_file_the_conversation_lacks_is_asked_for_by_name_with_its_key_path() -> None:
    (slot,) = needed_before_tools("What does lease.pdf say about pets?", [HANDBOOK], [], [])

    assert (slot.slot, slot.key_path) == ("document:lease.pdf", "documents/lease.pdf")
    assert [suggestion.label for suggestion in slot.suggestions] == ["handbook.pdf (folder hr)"]


def test_small_talk_and_questions_with_documents_to_answer_from_do_not_ask() -> None:
    assert needed_before_tools("Hello!", [], [], []) == []
    assert needed_before_tools("Thanks a lot", [], [], []) == []
    assert needed_before_tools("How many vacation days do I get?", [HANDBOOK], [], []) == []
    assert needed_before_tools("How many vacation days do I get?", None, ["handbook.pdf"], []) == []


def test_a_passage_offered_as_a_suggestion_is_labelled_by_its_words_not_its_heading_underlines() -> None:
    triggers = SourceSpan(
        ref="triggers.txt::S1",
        document="triggers.txt",
        span_id="S1",
        text="TRIGGERS\n========\n\nIntroduction\n------------\n\nA dpkg trigger is a facility that allows events.",
    )

    (slot,) = needed_context("How much is the monthly rent?", [triggers], [], [], ["triggers.txt"], [])

    (label,) = [suggestion.label for suggestion in slot.suggestions]
    assert label == "triggers.txt::S1: TRIGGERS Introduction A dpkg trigger is a facility that allows events."
