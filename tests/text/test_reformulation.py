"""A second wording of a query whose words the documents do not use: their own close spellings and stems."""

from __future__ import annotations

from orc.text import tokenize
from orc.text.reformulation import reformulated, unmatched_terms

VOCABULARY = set(tokenize("The licensee may terminate this licence upon written notice to the licensor."))


def test_a_misspelt_term_is_replaced_by_the_documents_spelling() -> None:
    terms = tokenize("How is the licence terminaton notified?")

    assert unmatched_terms(terms, VOCABULARY) == tokenize("terminaton notified")
    assert "termin" in reformulated(terms, VOCABULARY)  # the stem of "terminate"


def test_a_term_stands_in_for_the_documents_terms_that_share_its_first_letters() -> None:
    again = reformulated(tokenize("Who holds the licensing rights?"), VOCABULARY)

    assert set(tokenize("licensee licence licensor")) <= set(again)


def test_known_terms_are_kept_and_no_stand_in_means_no_second_round() -> None:
    assert reformulated(tokenize("licence parking"), VOCABULARY) == []  # "park" has no stand-in
    assert reformulated(tokenize("written notice"), VOCABULARY) == []  # nothing unknown
    assert tokenize("licence")[0] in reformulated(tokenize("licence terminaton"), VOCABULARY)
