"""The lexical leg that survives paraphrase: title field, related terms, feedback, sentence re-rank, follow-ups."""

from __future__ import annotations

from orc.text.lexical import index_fields, search, split_context
from orc.text.related import related_terms
from orc.text.tokens import tokenize

DOCUMENT = [
    "Each application installs a single XML file into the packages directory. The file is parsed at login.",
    "If you institute patent litigation against any entity, then any patent licenses granted to you terminate.",
    "Icons are looked up by the media type. The icon theme decides the size.",
    "The cache is written atomically. Readers never see a half-written cache.",
]


def ranked(query: str, passages: list[str], titles: list[str | None] | None = None) -> list[int]:
    return [found.passage for found in search(query, [index_fields(passages, titles)], limit=len(passages))]


def test_a_word_the_documents_do_not_use_finds_the_passage_through_a_related_word() -> None:
    # "sue" is nowhere in the text; WordNet relates it to "litigate", which stems like "litigation".
    (found,) = search("What happens if I sue someone?", [index_fields(DOCUMENT)], limit=4)

    assert found.passage == 1
    assert found.score > 0


def test_a_passage_found_only_through_its_section_title_is_found() -> None:
    passages = ["Numbers are stored in big-endian order, always.", "Values are kept in order."]

    found = ranked("byte order of the cache file", passages, ["2.9. The cache file", "2.3. The globs files"])
    untitled = ranked("byte order of the cache file", passages)

    assert found[0] == 0
    assert untitled[0] == 1


def test_a_passage_whose_words_sit_in_one_sentence_beats_one_that_spreads_them() -> None:
    together = "Filler about other things. The default weight of a glob is fifty. More filler text here."
    spread = "Defaults apply by default. Unrelated words. A glob has a weight; weight matters."

    assert ranked("default glob weight", [spread, together])[0] == 1


def test_the_words_of_a_context_suffix_weigh_less_than_the_questions_own() -> None:
    passages = ["The notice period is sixty days.", "The termination fee is one month of rent."]

    assert ranked("What about the termination fee? (context: notice period)", passages)[0] == 1
    assert split_context("What about it? (context: notice period)") == ("What about it?", ["notice", "period"])


def test_a_query_of_function_words_finds_nothing() -> None:
    assert search("what is it", [index_fields(DOCUMENT)], limit=3) == []


def test_the_related_terms_ship_with_orc_and_hold_synonyms_and_derived_forms() -> None:
    assert "litig" in related_terms("sue")
    assert "larg" in related_terms("bigger")
    assert related_terms("zzzz") == ()


def test_tokens_read_ligatures_as_letters_and_drop_contractions_of_function_words() -> None:
    assert tokenize("conﬁguration") == tokenize("configuration")
    assert tokenize("it's what they're saying, don't") == tokenize("saying")
    assert tokenize("the licensor's marks") == tokenize("licensor marks")
