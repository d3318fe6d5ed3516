"""Deterministic follow-up rewriting: a question that leans on the conversation gets its missing context.

Without a language model a pronoun cannot be resolved reliably, so the rewrite keeps the user's words and
appends the key words of the previous question and the salient words of the sentences the previous answer cited:
``"Can anyone else change it? (context: looks Mozilla licence steward Foundation)"`` — "it" is what the previous
exchange was about, and the spans the answer cited name it better than the question did. The suffix helps
document search (which weighs it below the user's own words), and :func:`split_context` lets the extractive
answerer use it for ranking without letting it decide whether an answer was found. orc uses it twice, never as a
model call: for the retrieval question of a follow-up (query_planner, whatever the model), and in the offline
model, whose history arrives as messages.
"""

from __future__ import annotations

import re

from orc.text import tokenize
from orc.text.lexical import split_context
from orc.text.markers import MARKER_PATTERN
from orc.text.tokens import STOPWORDS
from orc.text.tokens import words as words_of

__all__ = ["needs_context", "refers_back", "rewrite_follow_up", "split_context"]

MAX_CONTEXT_WORDS = 6
"""Key words taken from the previous question."""
MAX_ANSWER_WORDS = 4
"""Salient words taken from the sentences the previous answer cited."""
SHORT_MESSAGE_WORDS = 4

_REFERENCE = re.compile(
    r"\b(it|its|they|them|their|this|that|those|these|he|she|him|her|there|the same|what about|how about"
    r"|and what|same one|the other|the former|the latter|an example|for example|for instance|else|another"
    r"|(?:a|an|the)\s+(?:later|earlier|newer|older|previous|next)\b)\b",
    re.IGNORECASE,
)
# A cited sentence of an answer: the text before a ``[document::span]`` marker.
_CITED = re.compile(r"([^\[\]]+?)\s*" + MARKER_PATTERN)
# A word as carried over: a release number stays whole ("OpenSSH 9.2", not "9 2"), as the question wrote it.
_CARRIED_WORD = re.compile(r"[0-9]+(?:\.[0-9]+)+|[^\W_]+(?:['’][^\W_]+)?")
# Words that make a question a question but say nothing about its topic.
_QUESTION_WORDS = frozenset({"how", "long", "much", "many", "often", "kind", "also", "else", "get", "does"})


_CONTINUING = re.compile(r"^\W*(?:and|or|but|also|so|then|what about|how about)\b", re.IGNORECASE)


def refers_back(message: str) -> bool:
    """Whether ``message`` points at what was said before ("it", "those", "what about…", "and the second?")."""
    return bool(_REFERENCE.search(message) or _CONTINUING.match(message))


def needs_context(message: str) -> bool:
    """Whether ``message`` refers back to the conversation (pronouns, "what about", a message that continues
    with "and…", very short)."""
    return refers_back(message) or len(words_of(message)) <= SHORT_MESSAGE_WORDS


def rewrite_follow_up(message: str, history: list[tuple[str, str]]) -> str:
    """A standalone version of ``message``: unchanged, or with the previous question's key words and the salient
    words of the previous answer's cited sentences appended (``history``: ``(role, content)`` in order)."""
    message = " ".join(message.split())
    asked = [index for index, (role, content) in enumerate(history) if role == "user" and content.strip() != message]
    if not message or not asked or not needs_context(message):
        return message
    last = asked[-1]
    answers = [content for role, content in history[last + 1 :] if role == "assistant"]
    seen = set(tokenize(message))
    words = _key_words(_CARRIED_WORD.findall(split_context(history[last][1])[0]), seen)[:MAX_CONTEXT_WORDS]
    if answers:
        words += _salient(answers[-1], seen)[:MAX_ANSWER_WORDS]
    if not words:
        return message
    return f"{message} (context: {' '.join(words)})"


def _key_words(words: list[str], seen: set[str]) -> list[str]:
    """The content words among ``words`` whose stems are not in ``seen`` yet, in order (``seen`` grows)."""
    kept: list[str] = []
    for word in words:
        lowered = word.lower()
        stems = tokenize(word)
        base = re.split(r"['’]", lowered)[0]
        if base in STOPWORDS or lowered in _QUESTION_WORDS or not stems or stems[0] in seen:
            continue
        seen.add(stems[0])
        kept.append(word)
    return kept


def _salient(answer: str, seen: set[str]) -> list[str]:
    """The words of an answer's cited sentences that name what it was about: the most repeated first, then in
    order; only alphabetic words of four letters or more (an uncited answer, e.g. a refusal, gives none)."""
    cited = " ".join(match.group(1) for match in _CITED.finditer(answer))
    words = [word for word in words_of(cited) if word.isalpha() and len(word) >= 4]
    counts: dict[str, int] = {}
    for word in words:
        stems = tokenize(word)
        if stems:
            counts[stems[0]] = counts.get(stems[0], 0) + 1
    ranked = sorted(range(len(words)), key=lambda i: (-counts.get((tokenize(words[i]) or [""])[0], 0), i))
    return _key_words([words[i] for i in ranked], seen)
