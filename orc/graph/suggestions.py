"""Follow-up suggestions: up to three questions the retrieved documents can answer, made without a model call.

Each comes from a sentence of a retrieved span that the answer did not use (spans it did not cite first, best
ranked first), asked back the way a person would: "What about pets?" from the sentence's subject ("Pets are
allowed…"), else "What about the flat?" from its last noun phrase, else "What does <document> say about <topic>?"
with the first run of content words the question did not already name. Deterministic and cheap, so no model request is
added before the answer ends, and grounded by construction: the span that suggested it answers it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from orc.contracts import Citation, SourceSpan
from orc.text import split_sentences
from orc.text.tokens import STOPWORDS

MAX_SUGGESTIONS = 3
MAX_TOPIC_WORDS = 3
_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ][A-Za-zÀ-ÖØ-öø-ÿ'-]*")
_GENERIC = frozenset({"document", "documents", "section", "page", "following", "shall", "must", "will", "also"})


def follow_up_suggestions(
    question: str, sources: Sequence[SourceSpan], citations: Sequence[Citation], answer: str = ""
) -> list[str]:
    """Up to :data:`MAX_SUGGESTIONS` follow-up questions grounded in ``sources``: from the spans the answer did not
    cite first, then from the sentences of cited spans that the answer did not use."""
    asked = _words(question)
    answered = _words(answer)
    cited = {citation.ref for citation in citations}
    ordered = [source for source in sources if source.ref not in cited] + [s for s in sources if s.ref in cited]
    suggestions: list[str] = []
    topics: set[str] = set()
    for source in ordered:
        for sentence in split_sentences(source.text):
            words = _words(sentence)
            if words and len(words & answered) >= len(words) / 2:
                continue  # the answer already says this
            suggestion = _phrased(sentence, source.document, asked)
            if suggestion is None or suggestion.lower() in topics:
                continue
            topics.add(suggestion.lower())
            suggestions.append(suggestion)
            if len(suggestions) == MAX_SUGGESTIONS:
                return suggestions
            break  # one suggestion per span: spread them over the sources
    return suggestions


# Words after which a sentence's subject has ended ("The monthly rent | is …", "New employees | get …").
_VERBS = frozenset(
    "is are was were be may must can cannot shall will would should could has have had does do did get gets "
    "need needs lasts last takes take requires require covers cover applies apply".split()
)
_DETERMINERS = frozenset("the a an this these each every your our its their".split())
_PRONOUNS = frozenset("it they this that these those there he she we you i either neither both all".split())
MAX_SUBJECT_WORDS = 4
MAX_FALLBACK_TOPIC_WORDS = 2
"""A topic found without grammar ends early: past two words it runs into the verb ("battery life reaches")."""
_NOT_NOUNS = ("ly", "ing", "ed")


def _phrased(sentence: str, document: str, asked: set[str]) -> str | None:
    """The follow-up question for ``sentence``, or ``None`` when it offers nothing the question did not ask."""
    phrase = _subject(sentence, asked) or _noun_phrase(sentence, asked)
    if phrase is not None:
        return f"What about {phrase}?"
    topic = _topic(sentence, asked)
    if topic is None or any(word.endswith(_NOT_NOUNS) for word in topic.split()):
        return None  # "happily dealing" is no topic a person would ask about
    return f"What does {document} say about {topic}?"


def _new_content(words: Sequence[str], asked: set[str]) -> bool:
    content = [w.lower() for w in words if len(w) > 3 and w.lower() not in STOPWORDS and w.lower() not in _GENERIC]
    return bool(content) and not any(word in asked for word in content)


def _cased(words: Sequence[str]) -> str:
    return " ".join(word if word.isupper() else word.lower() for word in words)


def _subject(sentence: str, asked: set[str]) -> str | None:
    """ "pets" from "Pets are allowed …": the words before the first verb, when they are a short noun phrase."""
    words = _WORD.findall(sentence)
    verb = next((index for index, word in enumerate(words[: MAX_SUBJECT_WORDS + 1]) if word.lower() in _VERBS), None)
    if not verb or words[0].lower() in _PRONOUNS or not _new_content(words[:verb], asked):
        return None
    return _cased(words[:verb])


def _noun_phrase(sentence: str, asked: set[str]) -> str | None:
    """ "the landlord's written consent": a determiner and the content words after it, the last such phrase (a
    sentence ends on its object: "The tenant rents the flat" asks about the flat)."""
    words = _WORD.findall(sentence)
    for index in reversed(range(len(words))):
        word = words[index]
        if word.lower() not in _DETERMINERS:
            continue
        run: list[str] = []
        for following in words[index + 1 : index + 1 + MAX_TOPIC_WORDS]:
            if following.lower() in STOPWORDS or following.lower() in _VERBS:
                break
            run.append(following)
        if run and _new_content(run, asked):
            return _cased([word.lower(), *run])
    return None


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text) if len(word) > 3 and word.lower() not in STOPWORDS}


def _topic(sentence: str, asked: set[str]) -> str | None:
    """The first run of up to two content words of the sentence that the question did not name."""
    run: list[str] = []
    for word in _WORD.findall(sentence):
        lowered = word.lower()
        if len(word) > 3 and lowered not in STOPWORDS and lowered not in _GENERIC and lowered not in asked:
            run.append(word if word.isupper() else lowered)
            if len(run) == MAX_FALLBACK_TOPIC_WORDS:
                break
        elif run:
            break
    return " ".join(run) if run else None
