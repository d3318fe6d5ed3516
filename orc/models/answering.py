"""Extractive answering: pick the source sentences that best match a question and cite each one.

The sources come from the ``<sources>`` block that :func:`orc.models.prompting.format_sources` renders into the
answer and document_chat prompts. A sentence qualifies only when

- it covers enough of the question's *specific* words (content words weighted by how rare they are among the
  given sentences, so "tenant" in a lease counts for less than "sublet"), and
- it can hold the kind of answer the question expects (a number for "how much", a date for "when").

When no sentence qualifies the answer is :data:`NOT_FOUND`: an honest refusal beats loosely related text.
"""

from __future__ import annotations

import html
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from orc.models.questions import Expect, analyse, satisfies, terms
from orc.models.rewriting import split_context
from orc.text import rank, split_sentences

__all__ = ["NOT_FOUND", "Source", "answer_question", "find_sources", "parse_sources"]

NOT_FOUND = "I couldn't find an answer to that in the documents."

MAX_SENTENCES = 3
MIN_COVERAGE = 0.5
"""Share of the question's specific words (idf-weighted) a sentence must contain to be used."""
MIN_COVERAGE_YES_NO = 0.65
"""Yes/no questions have few content words and each matters ("Can the tenant *sublet*?"): ask for more."""
EXTRA_SENTENCE_RATIO = 0.75
"""A second or third sentence must score at least this share of the best sentence's score."""
HEADING_WORDS = 3
"""A sentence this short (``"Rent."``, ``"Security deposit."``) is a heading: it is joined to the next one."""

_SOURCES_BLOCK = re.compile(r"<sources>(.*?)</sources>", re.DOTALL)
_SUPPLIED_BLOCK = re.compile(r"<supplied_context>(.*?)</supplied_context>", re.DOTALL)
_SOURCE = re.compile(r"<source\b([^>]*)>(.*?)</source\s*>", re.DOTALL)
_ATTRIBUTE = re.compile(r"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")


@dataclass(frozen=True, slots=True)
class Source:
    """One ``<source>`` element: its SourceRef, page and text."""

    ref: str
    page: int | None
    text: str


@dataclass(frozen=True, slots=True)
class _Sentence:
    source: Source
    text: str
    terms: frozenset[str]


def find_sources(system_text: str) -> list[Source] | None:
    """The sources of the last ``<sources>`` block in ``system_text``, after what the user supplied for the
    question (a ``<supplied_context>`` block, which comes first); None when there is no sources block."""
    blocks = _SOURCES_BLOCK.findall(system_text)
    if not blocks:
        return None
    supplied = _SUPPLIED_BLOCK.findall(system_text)
    return (parse_sources(supplied[-1]) if supplied else []) + parse_sources(blocks[-1])


def parse_sources(block: str) -> list[Source]:
    """Parse ``<source ref="..." page="...">text</source>`` elements (attributes quoted, text escaped)."""
    sources = []
    for attributes, body in _SOURCE.findall(block):
        values = {
            name: html.unescape(single if single and not double else double)
            for name, double, single in _ATTRIBUTE.findall(attributes)
        }
        ref = values.get("ref", "").strip()
        if not ref:
            continue
        page = values.get("page", "").strip()
        text = html.unescape(body).strip()
        sources.append(Source(ref=ref, page=int(page) if page.isdigit() else None, text=text))
    return sources


def answer_question(question: str, sources: Sequence[Source]) -> str:
    """Up to three best-matching sentences, each followed by ``[ref]``; or :data:`NOT_FOUND`."""
    main, context = split_context(question)
    shape = analyse(main)
    sentences = [
        _Sentence(source=source, text=text, terms=terms(text)) for source in sources for text in _sentences(source.text)
    ]
    if not shape.terms or not sentences:
        return NOT_FOUND
    weights = _idf_weights(shape.terms, sentences)
    total_weight = sum(weights.values())
    minimum = MIN_COVERAGE_YES_NO if shape.expect is Expect.YES_NO else MIN_COVERAGE
    query = " ".join([main, *context])
    candidates: list[tuple[float, int]] = []
    for ranked in rank(query, [sentence.text for sentence in sentences]):
        sentence = sentences[ranked.index]
        coverage = sum(weights[term] for term in shape.terms & sentence.terms) / total_weight
        if coverage >= minimum and satisfies(sentence.text, shape.expect):
            # Coverage of the specific words decides; BM25 (which also sees rewrite context) breaks ties.
            candidates.append((coverage * 10 + ranked.score, ranked.index))
    if not candidates:
        return NOT_FOUND
    candidates.sort(key=lambda item: (-item[0], item[1]))
    best_score = candidates[0][0]
    chosen = [index for score, index in candidates[:MAX_SENTENCES] if score >= best_score * EXTRA_SENTENCE_RATIO]
    # Document order reads better than score order once the sentences are chosen.
    return " ".join(f"{sentences[index].text} [{sentences[index].source.ref}]" for index in sorted(chosen))


def _sentences(text: str) -> list[str]:
    """Sentences of a span, with heading-like fragments joined to the sentence that follows them.

    Titles (short pieces without closing punctuation, e.g. "3. Security deposit") are not answers and
    are left out; labels ending in ":" introduce what follows and are kept with it.
    """
    merged: list[str] = []
    pending = ""
    for sentence in split_sentences(text):
        if len(sentence.split()) <= HEADING_WORDS and not sentence.endswith((".", "!", "?", ":", ";")):
            continue
        if len(sentence.split()) <= HEADING_WORDS and sentence.endswith((".", ":")):
            pending = f"{pending} {sentence}".strip()
            continue
        merged.append(f"{pending} {sentence}".strip())
        pending = ""
    if pending:
        merged.append(pending)
    return merged


def _idf_weights(question_terms: frozenset[str], sentences: Sequence[_Sentence]) -> dict[str, float]:
    """Inverse sentence frequency of each question term.

    A term found nowhere is weighed like a term found once: an unknown word is as likely a paraphrase
    ("maximum" for "up to") as a sign that the documents do not cover the question.
    """
    counts: Counter[str] = Counter()
    for sentence in sentences:
        counts.update(question_terms & sentence.terms)
    total = len(sentences)
    return {term: math.log((total + 1) / (max(counts[term], 1) + 0.5)) for term in question_terms}
