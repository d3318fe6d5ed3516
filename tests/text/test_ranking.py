"""Lexical ranking: BM25 over stemmed content words, from text or from tokens kept with the passages."""

from __future__ import annotations

from orc.text import rank, rank_tokenized, tokenize

PASSAGES = [
    "The warranty lasts two years from the date of purchase.",
    "Monthly rent is 1,850 dollars, due on the first day of each month.",
    "Pets are allowed with a deposit.",
    "Rent increases are limited to once a year.",
]


def test_passages_that_share_the_questions_words_rank_first_and_others_are_left_out() -> None:
    ranked = rank("What is the monthly rent?", PASSAGES)

    assert [item.index for item in ranked] == [1, 3]
    assert ranked[0].overlap == 1.0 and ranked[0].score > ranked[1].score


def test_ranking_kept_tokens_gives_the_same_order_and_scores_as_ranking_the_text() -> None:
    corpus = [tokenize(passage) for passage in PASSAGES]

    for question in ("What is the monthly rent?", "How long is the warranty?", "pets deposit", "the of and"):
        assert rank_tokenized(tokenize(question), corpus, limit=2) == rank(question, PASSAGES, limit=2)
