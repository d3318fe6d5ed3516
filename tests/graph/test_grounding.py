"""Markers that name no retrieved span leave the answer, also while it streams; the answer's grounding is counted."""

from __future__ import annotations

import pytest

from orc.graph.grounding import MAX_MARKER_CHARS, MarkerFilter, grounding_report, keep_real_markers

RETRIEVED = {"lease.txt::S1", "lease.txt::S2"}
ANSWER = (
    "The rent is 900 euros [lease.txt::S1]. Notice is 60 days [lease.txt::S99]. "
    "Pets are allowed [made-up.pdf::S1; lease.txt::S2]. Parking is free."
)


def test_invented_markers_and_refs_are_removed_and_counted() -> None:
    text, removed = keep_real_markers(ANSWER, RETRIEVED)

    assert text == (
        "The rent is 900 euros [lease.txt::S1]. Notice is 60 days. Pets are allowed [lease.txt::S2]. Parking is free."
    )
    assert removed == 2


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13])
def test_a_streamed_answer_never_sends_an_invented_marker_whatever_the_piece_size(size: int) -> None:
    stream = MarkerFilter(RETRIEVED)
    sent = [stream.feed(ANSWER[i : i + size]) for i in range(0, len(ANSWER), size)]
    sent.append(stream.flush())

    assert "S99" not in "".join(sent) and "made-up" not in "".join(sent)
    assert "".join(sent) == keep_real_markers(ANSWER, RETRIEVED)[0]
    assert stream.removed == 2


def test_brackets_that_are_not_markers_stream_on_without_being_held_for_ever() -> None:
    stream = MarkerFilter(RETRIEVED)

    first = stream.feed("See [note")
    second = stream.feed(" " + "x" * MAX_MARKER_CHARS)

    assert first == "See"
    assert second.startswith(" [note x")
    assert stream.feed("] done") == "] done" and stream.flush() == ""


def test_the_report_counts_cited_and_uncited_sentences_and_removed_markers() -> None:
    text, removed = keep_real_markers(ANSWER, RETRIEVED)

    report = grounding_report(text, removed)

    assert (report.cited_sentences, report.uncited_sentences, report.removed_markers) == (2, 2, 2)
    assert not report.mostly_uncited
