"""History and sources are cut to their token budgets: old messages shortened first, then old turns dropped."""

from __future__ import annotations

import tiktoken

from orc.models.budget import OLD_MESSAGE_TOKENS, HistoryTurn, history_within, within_budget
from orc.models.tokens import EstimatedTokens, TiktokenTokens, token_counter_for

ESTIMATE = EstimatedTokens()


def turns(count: int, words: int = 100) -> list[HistoryTurn]:
    return [
        HistoryTurn(question=f"question {i} " + "word " * words, answer=f"answer {i} " + "reply " * words)
        for i in range(count)
    ]


def test_history_under_its_budget_is_kept_whole_up_to_the_turn_limit() -> None:
    history = turns(12, words=5)

    kept = history_within(history, ESTIMATE, budget=100_000, max_turns=10)

    assert kept == history[-10:]


def test_older_messages_are_shortened_before_any_turn_is_dropped() -> None:
    history = turns(4, words=400)  # about 500 tokens a message
    whole = sum(ESTIMATE.count(t.question) + ESTIMATE.count(t.answer) for t in history)

    kept = history_within(history, ESTIMATE, budget=whole // 2, max_turns=10)

    assert [t.question.split()[1] for t in kept] == ["0", "1", "2", "3"]
    assert all(ESTIMATE.count(t.question) <= OLD_MESSAGE_TOKENS + 1 for t in kept[:-1])
    assert kept[-1] == history[-1]
    assert kept[0].question.endswith("…")


def test_the_oldest_turns_are_dropped_when_shortening_is_not_enough() -> None:
    history = turns(10, words=400)

    kept = history_within(history, ESTIMATE, budget=1_200, max_turns=10)

    assert kept and kept[-1] == history[-1]
    assert [t.question.split()[1] for t in kept] == [str(i) for i in range(10 - len(kept), 10)]
    assert sum(ESTIMATE.count(t.question) + ESTIMATE.count(t.answer) for t in kept) <= 1_200


def test_history_cost_is_flat_however_long_the_conversation_grows() -> None:
    def cost(count: int) -> int:
        kept = history_within(turns(count, words=60), ESTIMATE, budget=2_000, max_turns=10)
        return sum(ESTIMATE.count(t.question) + ESTIMATE.count(t.answer) for t in kept)

    assert cost(10) == cost(20) == cost(50)


def test_sources_keep_their_ranking_prefix_within_the_budget_and_always_the_best_one() -> None:
    texts = ["a" * 400, "b" * 400, "c" * 400]

    assert within_budget(["s1", "s2", "s3"], texts, ESTIMATE, budget=250) == ["s1", "s2"]
    assert within_budget(["s1", "s2"], texts[:2], ESTIMATE, budget=10) == ["s1"]


def test_a_tiktoken_encoding_counts_and_truncates_by_its_own_tokens() -> None:
    # A tiny byte-level BPE built here: the real encodings are downloaded on first use, which tests never do.
    ranks = {bytes([i]): i for i in range(256)}
    ranks[b"ab"] = 256
    encoding = tiktoken.Encoding("tiny", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    counter = TiktokenTokens(encoding)

    assert counter.name == "tiny"
    assert counter.count("abab") == 2
    assert counter.truncate("ab" * 10, 4) == "ababab…"


def test_served_models_count_with_their_familys_encoding_and_the_offline_model_estimates() -> None:
    assert token_counter_for("gpt-4o-mini").name == "o200k_base"
    assert token_counter_for("gpt-4.1").name == "o200k_base"
    assert token_counter_for("my-azure-deployment").name == "cl100k_base"
    assert token_counter_for("orc-offline-extractive (offline)").name == "estimate"
    assert token_counter_for("function", tiktoken=False).name == "estimate"  # a test double has no tokenizer
