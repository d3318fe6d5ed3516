"""Small talk: a message that only greets, thanks, acknowledges or says goodbye, answered as a person would.

"Hello, thanks!" is not a question about the documents, and "I couldn't find an answer to that" would be an odd
reply to it. A message is small talk only when *every* word of it belongs to such a phrase: "Hi, what is the
notice period?" is a question, whatever it opens with. Deterministic; English phrases.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["SmallTalk", "is_small_talk", "small_talk", "small_talk_reply"]

SmallTalk = Literal["greeting", "thanks", "acknowledgement", "farewell", "wellbeing"]

# Each phrase, as lower-case words, and what it does; a message must be made of these phrases alone.
_PHRASES: dict[SmallTalk, tuple[str, ...]] = {
    "greeting": (
        "hi",
        "hello",
        "hey",
        "hiya",
        "howdy",
        "greetings",
        "yo",
        "good morning",
        "good afternoon",
        "good evening",
        "good day",
        "morning",
        "hi there",
        "hello there",
        "hey there",
        "dear orc",
        "orc",
    ),
    "thanks": (
        "thanks",
        "thank you",
        "thank you so much",
        "thank you very much",
        "thanks a lot",
        "thanks so much",
        "many thanks",
        "thx",
        "ty",
        "cheers",
        "much appreciated",
        "appreciated",
        "i appreciate it",
        "thanks for your help",
        "thanks for the help",
        "thank you for your help",
        "thank you for the help",
        "you're welcome",
    ),
    "acknowledgement": (
        "ok",
        "okay",
        "k",
        "great",
        "perfect",
        "awesome",
        "nice",
        "cool",
        "got it",
        "i see",
        "understood",
        "alright",
        "all right",
        "sounds good",
        "that helps",
        "that's helpful",
        "that was helpful",
        "that's great",
        "that's perfect",
        "that's useful",
        "useful",
        "this helps",
        "very helpful",
        "helpful",
        "good",
        "fine",
        "excellent",
        "wonderful",
        "brilliant",
        "makes sense",
        "that makes sense",
        "good to know",
        "noted",
        "sure",
        "yes",
        "no",
        "great job",
        "well done",
        "you're the best",
    ),
    "farewell": (
        "bye",
        "goodbye",
        "good bye",
        "bye bye",
        "see you",
        "see you later",
        "see ya",
        "later",
        "good night",
        "have a nice day",
        "have a good day",
        "take care",
        "that's all",
        "that is all",
        "that's it",
    ),
    "wellbeing": ("how are you", "how are you doing", "how's it going", "how is it going", "what's up", "sup"),
}
_OF_PHRASE = {phrase: kind for kind, phrases in _PHRASES.items() for phrase in phrases}
_LONGEST = max(len(phrase.split()) for phrase in _OF_PHRASE)
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_THANKS_FOR = re.compile(r"\b(thanks|thank you)\s+for\s+(?:the|your|that|this|all|my)\b(?:\s+[a-z']+){0,3}")
_FILLER = frozenset(
    {"and", "so", "very", "much", "again", "really", "too", "a", "lot", "for", "all", "that", "this", "was", "is", "oh"}
)
"""Words that may join the phrases ("thanks *so much*", "ok *and* bye") without making a question."""

_REPLIES: dict[SmallTalk, str] = {
    "greeting": "Hello! Ask me anything about your documents: I answer from them and show where each answer comes "
    "from.",
    "thanks": "You're welcome! Ask me anything else about your documents whenever you like.",
    "acknowledgement": "Glad it helps. Anything else you'd like to know about your documents?",
    "farewell": "Goodbye! This conversation stays here whenever you want to come back to it.",
    "wellbeing": "I'm doing well, thanks for asking! What would you like to know about your documents?",
}
_PRIORITY: tuple[SmallTalk, ...] = ("thanks", "farewell", "wellbeing", "greeting", "acknowledgement")
"""The reply a mixed message gets: "Hello, thanks!" is thanked, "ok, bye" is said goodbye to."""


def small_talk(message: str) -> SmallTalk | None:
    """What ``message`` does when it is only small talk (thanks win over greetings), else None — also when it asks
    anything at all ("Hi, what is the notice period?")."""
    text = message.lower().replace("’", "'")
    if "?" not in text:
        # "Thanks for the summary!": what the thanks are for does not make a question.
        text = _THANKS_FOR.sub(r"\1", text)
    words = _WORD.findall(text)
    if not words or len(words) > 3 * _LONGEST:
        return None
    found: set[SmallTalk] = set()
    position = 0
    while position < len(words):
        for size in range(min(_LONGEST, len(words) - position), 0, -1):
            kind = _OF_PHRASE.get(" ".join(words[position : position + size]))
            if kind is not None:
                found.add(kind)
                position += size
                break
        else:
            if words[position] not in _FILLER:
                return None
            position += 1
    return next((kind for kind in _PRIORITY if kind in found), None)


def is_small_talk(message: str) -> bool:
    """Whether ``message`` only greets, thanks, acknowledges or says goodbye."""
    return small_talk(message) is not None


def small_talk_reply(message: str) -> str | None:
    """A person's reply to ``message`` when it is small talk, else None."""
    kind = small_talk(message)
    return _REPLIES[kind] if kind is not None else None
