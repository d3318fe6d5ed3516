"""Token budgets for the answer prompt: recent history and sources that fit, so input stays flat as a chat grows.

chat-system-reference "Cost Management": recent turns under a budget, oldest dropped first. Old messages are
shortened before whole turns are dropped, because a short reminder of what was asked keeps "and the second one?"
resolvable where no reminder at all does not. The latest turn is kept whole as long as it fits alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from orc.models.tokens import TokenCounter

OLD_MESSAGE_TOKENS = 120
"""What an older message is shortened to when the history is over its budget."""

MESSAGE_OVERHEAD_TOKENS = 4
"""Chat formats spend a few tokens per message on roles and separators."""


@dataclass(frozen=True, slots=True)
class HistoryTurn:
    """One earlier exchange as the answer model sees it."""

    question: str
    answer: str


def history_within(
    turns: Sequence[HistoryTurn], counter: TokenCounter, *, budget: int, max_turns: int
) -> list[HistoryTurn]:
    """The most recent of ``turns`` (at most ``max_turns``) within ``budget`` tokens, oldest first.

    Over the budget, older messages are shortened to :data:`OLD_MESSAGE_TOKENS` one turn at a time from the
    oldest; if that is not enough, the oldest turns are dropped.
    """
    kept = list(turns[-max_turns:]) if max_turns > 0 else []
    sizes = [_size(turn, counter) for turn in kept]
    if sum(sizes) <= budget:
        return kept
    for index in range(len(kept) - 1):
        short = HistoryTurn(
            question=counter.truncate(kept[index].question, OLD_MESSAGE_TOKENS),
            answer=counter.truncate(kept[index].answer, OLD_MESSAGE_TOKENS),
        )
        kept[index], sizes[index] = short, _size(short, counter)
        if sum(sizes) <= budget:
            return kept
    while kept and sum(sizes) > budget:
        kept.pop(0)
        sizes.pop(0)
    return kept


def _size(turn: HistoryTurn, counter: TokenCounter) -> int:
    return counter.count(turn.question) + counter.count(turn.answer) + 2 * MESSAGE_OVERHEAD_TOKENS


T = TypeVar("T")


def within_budget(items: Sequence[T], texts: Sequence[str], counter: TokenCounter, *, budget: int) -> list[T]:
    """The leading ``items`` (ranked best first) whose ``texts`` fit in ``budget`` tokens; always the first one.

    The best source is kept even when it alone is over the budget: an answer without its best evidence is worse
    than a prompt a little over a soft budget.
    """
    chosen: list[T] = []
    used = 0
    for item, text in zip(items, texts, strict=True):
        cost = counter.count(text) + MESSAGE_OVERHEAD_TOKENS
        if chosen and used + cost > budget:
            break
        chosen.append(item)
        used += cost
    return chosen
