"""Follow-up suggestions: up to three questions the retrieved documents can answer, made without a model call.

Each comes from a sentence of a retrieved span that the answer did not use (spans it did not cite first, best
ranked first): its topic is the first run of content words that the question did not already name, asked back as
"What does <document> say about <topic>?". Deterministic and cheap, so no model request is added before the answer ends,
and grounded by construction: the span that suggested it answers it.
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
            topic = _topic(sentence, asked)
            if topic is None or topic.lower() in topics:
                continue
            topics.add(topic.lower())
            suggestions.append(f"What does {source.document} say about {topic}?")
            if len(suggestions) == MAX_SUGGESTIONS:
                return suggestions
            break  # one suggestion per span: spread them over the sources
    return suggestions


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text) if len(word) > 3 and word.lower() not in STOPWORDS}


def _topic(sentence: str, asked: set[str]) -> str | None:
    """The first run of up to three content words of the sentence that the question did not name."""
    run: list[str] = []
    for word in _WORD.findall(sentence):
        lowered = word.lower()
        if len(word) > 3 and lowered not in STOPWORDS and lowered not in _GENERIC and lowered not in asked:
            run.append(word if word.isupper() else lowered)
            if len(run) == MAX_TOPIC_WORDS:
                break
        elif run:
            break
    return " ".join(run) if run else None
