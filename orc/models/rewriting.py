"""Deterministic follow-up rewriting: a question that leans on the conversation gets its missing context.

Without a language model a pronoun cannot be resolved reliably, so the rewrite keeps the user's words and
appends the key words of the previous question: ``"What about the termination fee? (context: notice period
lease)"``. The suffix helps document search, and :func:`split_context` lets the extractive answerer use it
for ranking without letting it decide whether an answer was found. orc uses it twice, never as a model call: for
the retrieval question of a follow-up (query_planner), and in the offline model, whose history arrives as messages.
"""

from __future__ import annotations

import re

from orc.text import tokenize
from orc.text.tokens import STOPWORDS

__all__ = ["needs_context", "rewrite_follow_up", "split_context"]

MAX_CONTEXT_WORDS = 6
SHORT_MESSAGE_WORDS = 4

_CONTEXT_SUFFIX = re.compile(r"\s*\(context:\s*([^()]*)\)\s*$", re.IGNORECASE)
_REFERENCE = re.compile(
    r"\b(it|its|they|them|their|this|that|those|these|he|she|him|her|there|the same|what about|how about"
    r"|and what|same one|the other|the former|the latter)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
# Words that make a question a question but say nothing about its topic.
_QUESTION_WORDS = frozenset({"how", "long", "much", "many", "often", "kind", "also", "else", "get", "does"})


def split_context(question: str) -> tuple[str, list[str]]:
    """Separate a rewritten question from the ``(context: ...)`` suffix :func:`rewrite_follow_up` adds."""
    match = _CONTEXT_SUFFIX.search(question)
    if not match:
        return question.strip(), []
    return question[: match.start()].strip(), match.group(1).split()


def needs_context(message: str) -> bool:
    """Whether ``message`` refers back to the conversation (pronouns, "what about", very short)."""
    return bool(_REFERENCE.search(message)) or len(_WORD.findall(message)) <= SHORT_MESSAGE_WORDS


def rewrite_follow_up(message: str, history: list[tuple[str, str]]) -> str:
    """A standalone version of ``message``: unchanged, or with the previous question's key words appended."""
    message = " ".join(message.split())
    previous = [content for role, content in history if role == "user" and content.strip() != message]
    if not message or not previous or not needs_context(message):
        return message
    own_terms = set(tokenize(message))
    words: list[str] = []
    seen: set[str] = set()
    for word in _WORD.findall(split_context(previous[-1])[0]):
        lowered = word.lower()
        stems = tokenize(word)
        if lowered in STOPWORDS or lowered in _QUESTION_WORDS or not stems:
            continue
        if stems[0] in own_terms or stems[0] in seen:
            continue
        seen.add(stems[0])
        words.append(word)
    if not words:
        return message
    return f"{message} (context: {' '.join(words[:MAX_CONTEXT_WORDS])})"
