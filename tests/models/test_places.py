"""Places to look: under a decline, the spans that came closest, each with its closest sentence — never citations."""

from __future__ import annotations

from orc.contracts import SourceSpan
from orc.models.declines import NOT_FOUND, is_decline, is_plain_decline
from orc.models.places import EXCERPT_CHARS, MAX_PLACES, places_to_look


def span(ref: str, text: str, page: int | None = None, section: str | None = None) -> SourceSpan:
    document, _, span_id = ref.partition("::")
    return SourceSpan(ref=ref, document=document, span_id=span_id, page=page, text=text, section=section)


MANUAL = [
    span("gzip.txt::S3", "The gzip command keeps the original name. Compressed files can be restored with gunzip."),
    span(
        "gzip.txt::S9",
        "Files created by zip can be uncompressed by gzip only if they have a single member. "
        "To extract zip files with several members, use unzip instead of gunzip.",
        page=2,
        section="DESCRIPTION",
    ),
    span("tar.txt::S4", "GNU tar stores many files in one archive."),
    span("tar.txt::S7", "The --delete option removes members from an archive."),
]


def test_the_span_whose_sentence_comes_closest_is_listed_first_with_that_sentence_as_its_excerpt() -> None:
    places = places_to_look("Can gunzip open a zip archive with several files inside?", MANUAL)

    first = places[0]
    assert (first.ref, first.document, first.span_id, first.page, first.section) == (
        "gzip.txt::S9",
        "gzip.txt",
        "S9",
        2,
        "DESCRIPTION",
    )
    assert first.excerpt == "To extract zip files with several members, use unzip instead of gunzip."


def test_at_most_three_places_one_per_span() -> None:
    places = places_to_look("How do archives work with gzip and tar?", MANUAL)

    assert len(places) == MAX_PLACES == 3
    assert len({place.ref for place in places}) == 3


def test_a_question_sharing_no_word_keeps_retrievals_order() -> None:
    places = places_to_look("?", MANUAL)

    assert [place.ref for place in places] == ["gzip.txt::S3", "gzip.txt::S9", "tar.txt::S4"]


def test_after_the_closest_sentences_span_the_places_follow_retrievals_order() -> None:
    retrievals_best = span("tar.txt::S1", "Archives made by tar keep owners and permissions of their members.")
    closer = [
        span("tar.txt::S2", "The --delete option removes members from an archive."),
        span("tar.txt::S3", "The --append option adds members to an archive."),
        span("tar.txt::S4", "The --update option replaces members of an archive."),
    ]

    places = places_to_look("Which option changes the members of an archive?", [retrievals_best, *closer])

    assert [place.ref for place in places] == ["tar.txt::S2", "tar.txt::S1", "tar.txt::S3"]


def test_a_long_sentence_is_cut_at_a_word_with_an_ellipsis() -> None:
    long = span("spec.txt::S1", "The parser reads " + "every field of the record " * 30 + "twice.")

    (place,) = places_to_look("How does the parser read the record?", [long])

    assert len(place.excerpt) <= EXCERPT_CHARS and place.excerpt.endswith("…")


def test_no_sources_no_places() -> None:
    assert places_to_look("What is the rent?", []) == []


def test_a_decline_is_recognised_in_the_offline_models_words_and_in_a_real_models() -> None:
    assert is_decline(NOT_FOUND)
    assert is_decline("The documents do not mention a parking fee.")
    assert not is_decline("The rent is 1,450 euros. [lease.txt::S2]")
    assert is_plain_decline("I could not find the parking fee in the documents.")
    assert not is_plain_decline("The lease does not mention parking, but the rent is 1,450 euros [lease.txt::S2].")
