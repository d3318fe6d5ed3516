"""Packing the answer request's sources: more, shorter passages within ``ORC_SOURCES_TOKENS``.

A model can only cite what it is sent. Measured on paraphrased questions over real documents (``bench/finding.py``,
figures in ``bench/README.md``), the passage holding the answer is often ranked 10th to 30th, not in the first
few: a user's words are not the document's. Sending the first dozen whole spans spends the budget on the best
ranks and never reaches those; sending thirty whole spans costs three times the tokens. So the best-ranked
:data:`WHOLE_PASSAGES` (:data:`WHOLE_PASSAGES_HYBRID` of a ranking a vector leg took part in) are sent whole, and
every later one as an excerpt — the sentences around the one that shares the most words with the question, at
most :data:`EXCERPT_CHARS` characters, cut from the span's own text — until the token budget is full. An excerpt
keeps its span's ref, page and section: a citation of it points at the span, and its quote is the span's own words.

An excerpt is cut around the question's words that few of the ranked sources hold (an idf over them): a word
every candidate repeats says little about where in a span the answer is. A lower-ranked source is sent with its
layout's runs of blanks (a manual page's indentation, justified lines) closed up, line and paragraph breaks kept
(:func:`tidied`): an excerpt's characters then go to words, so more of a long span's sentences fit in it and the
late answer of a manual-page option is reached more often (measured: ``bench/README.md``). The words are the
span's own; a citation's quote is matched to its span with white space ignored. The best sources, sent whole,
keep their layout (a code listing's indentation). When the retrieval matched fewer spans
than the request may hold, the ranking ends with the neighbours of its hits (``fill`` of
:meth:`orc.search.retriever.Retriever.retrieve`), so budget the ranking leaves unused goes to the passages around
the best ones.

Measured alternatives that did not help at the same budget: shorter spans for every rank (the ranking itself got
worse), and the neighbours of the best hits in place of lower-ranked spans (answers ranked low were rarely next to
a strong hit).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from orc.contracts import SourceSpan
from orc.models.budget import MESSAGE_OVERHEAD_TOKENS, within_budget
from orc.models.tokens import TokenCounter
from orc.text import tokenize
from orc.text.lexical import split_context

WHOLE_PASSAGES = 6
"""The best-ranked sources sent whole; later ones are sent as excerpts."""
WHOLE_PASSAGES_HYBRID = 10
"""The best-ranked sources sent whole when a vector leg ranked them with the lexical one. The vector leg finds a
span by its meaning, often one that shares few of the question's words; cut around those words, its excerpt
missed the answer (a span is a paragraph or two: the answer was elsewhere in it). A hybrid ranking holds its
answer higher than a lexical one, so its head is worth more of the budget than the excerpts it displaces
(measured: ``bench/README.md``, ``finding``). A lexical ranking keeps :data:`WHOLE_PASSAGES`: its answers sit
deeper, where only excerpts reach."""
EXCERPT_CHARS = 450
"""The longest excerpt of a lower-ranked source, in characters (about 110 tokens)."""
CONTEXT_SHARE = 0.5
"""Weight of a follow-up's ``(context: …)`` word in choosing an excerpt, against the question's own words: the
context says what the conversation is about, the question what the reader wants from it."""

_BLANKS = re.compile(r"[ \t]+")
_BLANK_LINES = re.compile(r"\n{3,}")
# Sentence ends (as orc.text.sentences splits them), paragraph breaks and list items, as offsets into the text.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9`])|\n[ \t]*\n\s*|\n(?=\s*(?:[-*•]|\d+[.)])\s)")


def pack_sources(
    ranked: Sequence[SourceSpan],
    question: str,
    counter: TokenCounter,
    *,
    budget: int,
    kept: Sequence[SourceSpan] = (),
    hybrid: bool = False,
) -> list[SourceSpan]:
    """``ranked`` (best first) as sent to the model: the first :data:`WHOLE_PASSAGES` whole
    (:data:`WHOLE_PASSAGES_HYBRID` when ``hybrid``: a vector leg ranked them too), then ``kept`` whole (the spans
    the previous answer cited: a follow-up's evidence), then the rest of ``ranked`` — whole when all of it fits in
    ``budget`` tokens, else :func:`tidied` and cut to excerpts around ``question``'s words — as many as fit (the
    best source always). Each span once."""
    whole_passages = WHOLE_PASSAGES_HYBRID if hybrid else WHOLE_PASSAGES
    head = _unique([*ranked[:whole_passages], *kept])
    tail = [source for source in _unique(ranked[whole_passages:]) if source.ref not in {s.ref for s in head}]
    whole = [*head, *tail]
    if sum(counter.count(source.text) + MESSAGE_OVERHEAD_TOKENS for source in whole) > budget:
        # Only when the whole ranking does not fit are the lower ranks cut to their excerpts.
        weights = _weights(question, whole)
        whole = [*head, *(_excerpt(tidied(source), weights, EXCERPT_CHARS) for source in tail)]
    return within_budget(whole, [source.text for source in whole], counter, budget=budget)


def tidied(source: SourceSpan) -> SourceSpan:
    """``source`` with each line's runs of spaces and tabs closed up to one space and trimmed, and runs of blank
    lines cut to one: the same words, line breaks and paragraphs, without the layout's padding."""
    lines = (_BLANKS.sub(" ", line).strip() for line in source.text.splitlines())
    text = _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
    return source if text == source.text else source.model_copy(update={"text": text})


def _unique(sources: Sequence[SourceSpan]) -> list[SourceSpan]:
    seen: set[str] = set()
    kept: list[SourceSpan] = []
    for source in sources:
        if source.ref not in seen:
            seen.add(source.ref)
            kept.append(source)
    return kept


def _weights(question: str, sources: Sequence[SourceSpan]) -> dict[str, float]:
    """The words of ``question`` with an idf over ``sources`` (a word every candidate holds tells the excerpt
    little); a follow-up's ``(context: …)`` words at :data:`CONTEXT_SHARE` of theirs."""
    asked, context = split_context(question)
    shares = {term: CONTEXT_SHARE for term in tokenize(" ".join(context))} | {term: 1.0 for term in tokenize(asked)}
    held = [set(tokenize(source.text)) for source in sources]
    total = len(held)
    return {
        term: share * math.log(1.0 + total / (1 + sum(term in words for words in held)))
        for term, share in shares.items()
    }


def _excerpt(source: SourceSpan, weights: dict[str, float], limit: int) -> SourceSpan:
    """``source`` cut to the run of its sentences around the one that holds the most of the question's words, by
    ``weights`` (with half credit for a word in the next sentence), at most ``limit`` characters; unchanged when
    it is that short."""
    text = source.text
    if len(text) <= limit:
        return source
    pieces = _sentences(text)
    if len(pieces) < 2:
        return source
    found = [set(tokenize(text[start:end])) & weights.keys() for start, end in pieces]

    def weight(index: int) -> tuple[float, int]:
        following = found[index + 1] - found[index] if index + 1 < len(pieces) else set()
        return sum(weights[term] for term in found[index]) + 0.5 * sum(weights[term] for term in following), -index

    best = max(range(len(pieces)), key=weight)
    first = last = best
    # Grow forward first (an answer tends to follow the sentence that names the subject), then backward.
    while True:
        grew = False
        for candidate in (last + 1, first - 1):
            if 0 <= candidate < len(pieces):
                start, end = min(pieces[first][0], pieces[candidate][0]), max(pieces[last][1], pieces[candidate][1])
                if end - start <= limit:
                    first, last = min(first, candidate), max(last, candidate)
                    grew = True
        if not grew:
            break
    start, end = pieces[first][0], pieces[last][1]
    if end - start > limit:  # one sentence longer than the limit: its start, cut at a word
        cut = text.rfind(" ", start, start + limit)
        end = cut if cut > start else start + limit
    return source.model_copy(update={"text": text[start:end]})


def _sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the sentences of ``text``, white space trimmed."""
    pieces: list[tuple[int, int]] = []
    cursor = 0
    for match in _BOUNDARY.finditer(text):
        pieces.append((cursor, match.start()))
        cursor = match.end()
    pieces.append((cursor, len(text)))
    trimmed = []
    for start, end in pieces:
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            trimmed.append((start, end))
    return trimmed
