"""Follow-up suggestions read like what a person would ask next, never like a template over the file name."""

from __future__ import annotations

from orc.contracts import SourceSpan
from orc.graph.suggestions import follow_up_suggestions


def span(number: int, text: str, document: str = "lease.txt") -> SourceSpan:
    return SourceSpan(ref=f"{document}::S{number}", document=document, span_id=f"S{number}", text=text)


def test_follow_ups_ask_about_the_subject_or_object_of_an_unused_sentence() -> None:
    sources = [
        span(1, "The monthly rent is 1,450 euros."),
        span(2, "Pets are allowed with the landlord's written consent."),
        span(3, "The tenant rents the flat at Rue Haute 12."),
        span(4, "Remote work is allowed two days a week.", "handbook.docx"),
    ]

    suggestions = follow_up_suggestions("What is the monthly rent?", sources, [], "The monthly rent is 1,450 euros.")

    assert suggestions == ["What about pets?", "What about the flat?", "What about remote work?"]


def test_a_sentence_without_a_clear_topic_suggests_nothing_rather_than_an_odd_question() -> None:
    sources = [span(1, "If you are happily dealing with man pages, skip this.", "man-db-FAQ")]

    assert follow_up_suggestions("How do I read man pages?", sources, []) == []
