"""Conversation titles: a short title made from the first question, at once and without a model call.

A configured language model may later replace it with a generated one, off the turn's critical path
(:meth:`orc.conversations.ConversationRepository.set_generated_title`); a title the user chose is never replaced.
"""

from __future__ import annotations

import re

from orc.output_policy import OutputPolicy

_POLICY = OutputPolicy()
"""Titles never show images: the strictest policy, whatever hosts answers may show images from."""

MAX_USER_TITLE_CHARS = 200
"""The longest title: a user's rename is refused past it, and a question or a generated title longer than this (a
paragraph, not a title) is cut at a word, with "…". Anything shorter is stored whole: a list or a header that has
less room shortens it where it is shown, so an export or a wider screen still has the whole title."""

# Only "what is …"-style openings are dropped: they leave a noun phrase ("Battery life of the X2"). Dropping
# other question words leaves broken grammar ("Clause 4 say"), so those questions keep their words.
_LEADING = re.compile(
    r"^(?:please\s+|tell me\s+)*(?:(?:what|who)\s+(?:is|are|was|were)\s+(?:the\s+)?)?",
    re.IGNORECASE,
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]")


def title_from_question(question: str) -> str:
    """``"How much notice is needed to end the lease?"`` → ``"Notice is needed to end the lease"``.

    Question words go and the first letter is capitalised; the rest is kept whole (up to
    :data:`MAX_USER_TITLE_CHARS`). A question that would leave nothing keeps its own words.
    """
    words = " ".join(_CONTROL.sub(" ", question).split())
    core = bounded(_LEADING.sub("", words).rstrip(" ?!.") or words.rstrip(" ?!.") or words)
    return _POLICY.text(core[:1].upper() + core[1:])


def bounded(title: str) -> str:
    """``title`` whole, or, past :data:`MAX_USER_TITLE_CHARS`, cut at the last word that fits, with "…"."""
    if len(title) <= MAX_USER_TITLE_CHARS:
        return title
    cut = title[: MAX_USER_TITLE_CHARS - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > MAX_USER_TITLE_CHARS // 2 else cut).rstrip(" ,;:") + "…"


def clean_title(title: str) -> str:
    """A user's title, with control and invisible characters removed and spaces collapsed; may be empty."""
    return _POLICY.text(" ".join(_CONTROL.sub(" ", title).split()))
