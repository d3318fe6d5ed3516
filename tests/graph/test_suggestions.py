"""Follow-up suggestions read like what a person would ask next, never like a template over the file name: from the
model when it writes them (its block never reaches the answer), else made from the spans the answer did not use."""

from __future__ import annotations

from pathlib import Path

import pytest

from orc.contracts import SourceSpan
from orc.documents.parsing.extraction import extract
from orc.graph.suggestions import FollowUpFilter, follow_up_suggestions
from orc.search.spans import make_spans

DATA = Path(__file__).parent / "data"


def span(number: int, text: str, document: str = "lease.txt", section: str | None = None) -> SourceSpan:
    return SourceSpan(ref=f"{document}::S{number}", document=document, span_id=f"S{number}", text=text, section=section)


def test_follow_ups_ask_what_a_person_would_from_the_subject_and_verb_of_an_unused_sentence() -> None:
    sources = [
        span(1, "The monthly rent is 1,450 euros."),
        span(2, "Pets are allowed with the landlord's written consent."),
        span(3, "The deposit is 2,900 euros and is returned within 30 days."),
        span(4, "The warranty lasts two years from the date of purchase.", "warranty.txt"),
    ]

    suggestions = follow_up_suggestions("What is the monthly rent?", sources, [], "The monthly rent is 1,450 euros.")

    assert suggestions == ["Are pets allowed?", "How much is the deposit?", "How long does the warranty last?"]


def test_a_sentence_whose_subject_is_no_noun_phrase_is_not_asked_back() -> None:
    sources = [
        span(1, "Technically there is no limit on the number of keys."),
        span(2, "If you are happily dealing with man pages, skip this.", "man-db-FAQ"),
    ]

    suggestions = follow_up_suggestions("How do I read man pages?", sources, [])

    # Not "What about technically there?", nor anything about "happily dealing".
    assert suggestions == ["What does lease.txt say about the number of keys?"]


def test_text_the_user_supplied_to_a_context_request_is_never_asked_about() -> None:
    supplied = SourceSpan(
        ref="supplied::evidence-1",
        document="supplied",
        span_id="evidence-1",
        text="The dpkg support contract costs 120 euros per year.",
    )
    sources = [supplied, span(1, "Pets are allowed with the landlord's written consent.")]

    suggestions = follow_up_suggestions("How much is the monthly rent?", sources, [])

    assert suggestions == ["Are pets allowed?"]


def test_a_heading_that_is_a_question_is_asked_as_it_is_and_a_topic_heading_names_the_document_by_its_title() -> None:
    sources = [
        span(1, "Use xz -d file.xz to decompress it.", "xz-faq.txt", "XZ Utils FAQ › Q: How do I decompress a file?"),
        span(2, "Staff may work from home two days a week.", "employee-handbook.md", "Employee Handbook › Remote Work"),
        span(3, "Residential lease agreement, Rue Haute 12.", "lease-agreement.md"),
    ]

    suggestions = follow_up_suggestions("What is in the files?", sources, [])

    assert suggestions[0] == "How do I decompress a file?"
    assert suggestions[1] == "What does “Employee Handbook” say about remote work?"
    # An adjective on its own is no topic: never "What does lease-agreement.md say about residential?"
    assert not any("lease-agreement.md" in s or s.endswith("about residential?") for s in suggestions)


def test_generic_headings_and_the_documents_own_title_are_not_topics() -> None:
    sources = [
        span(1, "This guide explains the tools.", "guide.md", "Introduction"),
        span(2, "A lease between the parties.", "lease.md", "Lease"),
    ]

    suggestions = follow_up_suggestions("What is this?", sources, [])

    assert not any("introduction" in s.lower() or "about lease" in s.lower() for s in suggestions), suggestions


def test_nothing_the_question_asked_or_the_answer_said_is_suggested_again() -> None:
    sources = [span(1, "The monthly rent is 1,450 euros."), span(2, "The rent is paid by bank transfer.")]

    suggestions = follow_up_suggestions("What is the monthly rent?", sources, [], "The monthly rent is 1,450 euros.")

    assert suggestions == []


@pytest.mark.parametrize(
    "pieces",
    [
        ["The rent is 1,450 euros [lease.txt::S1].", "\n<follow_ups>\n- Is a deposit required?\n", "</follow_ups>"],
        ["The rent is 1,450 euros [lease.txt::S1].\n<fol", "low_ups>\n1. Is a deposit required?\n</follow_ups>"],
        ["The rent is 1,450 euros [lease.txt::S1].\n", "<", "follow_ups>", "Is a deposit required?"],
    ],
)
def test_the_models_follow_up_block_is_cut_from_the_streamed_answer_and_read_as_suggestions(
    pieces: list[str],
) -> None:
    follow_ups = FollowUpFilter()

    shown = "".join(follow_ups.feed(piece) for piece in pieces) + follow_ups.flush()

    assert shown.strip() == "The rent is 1,450 euros [lease.txt::S1]."
    assert follow_ups.suggestions == ["Is a deposit required?"]


def test_an_answer_without_a_block_is_passed_whole_and_a_lone_angle_bracket_is_not_held_for_ever() -> None:
    follow_ups = FollowUpFilter()

    shown = follow_ups.feed("Rent < 1,500 euros") + follow_ups.feed(" per month <") + follow_ups.flush()

    assert shown == "Rent < 1,500 euros per month <"
    assert follow_ups.suggestions == []


def test_a_block_keeps_at_most_three_distinct_short_questions() -> None:
    block = "<follow_ups>\n- A?\n- A?\n- B?\n\n- " + "x" * 300 + "?\n- C?\n- D?\n</follow_ups> trailing"

    follow_ups = FollowUpFilter()
    assert follow_ups.strip("Answer. " + block) == "Answer. "

    assert follow_ups.suggestions == ["A?", "B?", "C?"]


def test_one_long_passage_still_gives_several_questions_the_specific_ones_first() -> None:
    passage = (
        "The flat has a kitchen and a cellar. Pets are allowed with the landlord's consent. "
        "The deposit is 2,900 euros. The monthly rent is 1,450 euros."
    )

    suggestions = follow_up_suggestions("What is the monthly rent?", [span(1, passage)], [])

    assert suggestions == ["Are pets allowed?", "How much is the deposit?", "What does lease.txt say about the flat?"]


def real_spans(filename: str) -> list[SourceSpan]:
    """The spans orc makes of a real document in ``data/`` (procps' bugs.md, zstd's TESTING.md)."""
    document = extract((DATA / filename).read_bytes(), filename)
    return [
        SourceSpan(ref=f"{filename}::{s.span_id}", document=filename, span_id=s.span_id, text=s.text, section=s.section)
        for s in make_spans(document)
    ]


REAL_QUESTIONS = [
    "How do I report a bug?",
    "Where do I send bug reports?",
    "What do the short tests run?",
    "What runs on the dev branch?",
    "What should a bug report include?",
    "How are patches sent?",
    "What are the long tests?",
    "Which tests run under valgrind?",
]


def test_real_documents_are_named_by_their_title_or_as_files_never_as_a_noun_made_of_a_file_name() -> None:
    sources = real_spans("bugs.md") + real_spans("TESTING.md")

    # Every span is retrieved for some question, three at a time, as a turn's search returns them.
    offered = {
        suggestion
        for question in REAL_QUESTIONS
        for start in range(len(sources))
        for suggestion in follow_up_suggestions(question, sources[start : start + 3], [])
    }

    assert offered
    for suggestion in offered:
        assert suggestion.endswith("?") and not suggestion.startswith("What about"), suggestion
        assert not any(bad in suggestion for bad in ("the bugs", "the TESTING", "BUG REPORTS", "the current version"))
    assert "What does “Bug Reports” say about merge requests?" in offered
    assert "What does “Testing” say about short tests?" in offered
    assert "What should I send?" in offered  # the heading "What to send", asked as a person asks it


def test_a_document_without_a_title_is_named_as_a_file() -> None:
    sources = [span(1, "Merge requests are found on GitLab.", "bugs.md", "Merge Requests")]

    assert follow_up_suggestions("How do I report a bug?", sources, []) == [
        "What does bugs.md say about merge requests?"
    ]
