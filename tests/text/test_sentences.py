"""Sentence splitting as readers meet it: what an answer quotes must read as the document's prose."""

from __future__ import annotations

from orc.models.passages import Source, passages
from orc.text import split_sentences

# procps' bugs.md: setext headings whose underline runs straight into the section's first line.
BUGS = (
    "BUG REPORTS\n"
    "===========\n"
    "\n"
    "The following is information for reporting bugs.\n"
    "\n"
    "Where to send\n"
    "-------------\n"
    "You can raise issues on the GitLab issues tracker. You\n"
    "will need a GitLab login to do so.\n"
)


def test_an_underline_never_opens_the_sentence_below_it() -> None:
    sentences = split_sentences(BUGS)

    assert "You can raise issues on the GitLab issues tracker." in sentences
    assert not any(sentence.startswith(("-", "=")) and sentence.strip("-=") for sentence in sentences)


def test_a_section_whose_underline_touches_its_text_is_headed_by_its_title() -> None:
    found = passages(Source(ref="bugs.md::S1", page=None, text=BUGS))

    assert [(passage.text, passage.heading) for passage in found] == [
        ("The following is information for reporting bugs.", "BUG REPORTS"),
        ("You can raise issues on the GitLab issues tracker.", "Where to send"),
        ("You will need a GitLab login to do so.", "Where to send"),
    ]


def test_a_table_border_is_no_part_of_a_row() -> None:
    text = "+------+------+\n| size | time |\n+------+------+\n| 5 MB | 2 s  |\n+------+------+"

    assert [sentence for sentence in split_sentences(text) if "|" in sentence] == ["| size | time |", "| 5 MB | 2 s |"]


def test_a_sentence_that_opens_in_bold_or_in_quotes_is_a_sentence_of_its_own() -> None:
    text = (
        "pip picks the newest version that fits. **The last number** is the patch release. "
        "“Backtracking” is when it tries an older one. _Pinning_ stops it."
    )

    assert split_sentences(text) == [
        "pip picks the newest version that fits.",
        "**The last number** is the patch release.",
        "“Backtracking” is when it tries an older one.",
        "_Pinning_ stops it.",
    ]
