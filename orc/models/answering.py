"""Extractive answering: pick the source sentences that best match a question and cite each one.

The sources come from the ``<sources>`` block that :func:`orc.models.prompting.format_sources` renders into the
answer and document_chat prompts. Each sentence gets one *evidence* figure: the share of the question's
*specific* words it covers (content words weighted by how rare they are among the given sentences, so "tenant" in
a lease counts for less than "sublet"; its heading, its neighbours and related words count for part), lowered
when it cannot hold the kind of answer the question expects (a number for "how much", a date for "when"), and
nothing else: no rule per question word decides.

When no sentence's evidence exceeds the one calibrated threshold :data:`MIN_EVIDENCE` the answer is
:data:`NOT_FOUND`: an honest refusal beats loosely related text.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from orc.contracts import SECTION_SEPARATOR
from orc.models.questions import SYNONYMS, Expect, QuestionShape, analyse, defines, satisfies, terms, terms_of
from orc.models.rewriting import split_context
from orc.text import rank, split_sentences, tokenize
from orc.text.related import related_terms

__all__ = ["NOT_FOUND", "Source", "answer_question", "answer_with_evidence", "find_sources", "parse_sources"]

NOT_FOUND = "I couldn't find an answer to that in the documents."

MAX_SENTENCES = 3
MIN_EVIDENCE = 0.52
"""The one decline threshold: an answer needs a sentence whose evidence (:func:`_evidence`) exceeds it (half
the question is not enough: "How do I reset my password?" is not answered by a sentence about passwords). Measured
as precision on unanswerable questions against recall on answerable ones (``bench/README.md``)."""
UNFIT_FACTOR = 0.5
"""Evidence kept by a sentence that cannot hold the kind of answer expected (no number for "how many")."""
YES_NO_FACTOR = 0.77
"""Evidence kept for a yes/no question: it has few content words and each matters ("Can the tenant *sublet*?"),
so it needs about 0.7 of them covered where other questions need more than half."""
RELATED_CREDIT = 0.5
"""Share of a question word's weight that a related word (WordNet's synonym, derived form) earns."""
EXTRA_SENTENCE_RATIO = 0.75
"""A second or third sentence must score at least this share of the best sentence's score."""
HEADING_WORDS = 3
"""A sentence this short (``"Rent."``, ``"Security deposit."``) is a heading: it is joined to the next one."""
TITLE_WORDS = 8
"""Longest section title told apart from a sentence by its capitalised words."""
NEARBY_CREDIT = 0.5
PAIR_BONUS = 0.5
DEFINITION_BONUS = 2.0
"""Added (twice for ``"X" means…``) to the score of a sentence that defines what "what does X mean" asks."""

_NONE: frozenset[str] = frozenset()
_TERMINAL = (".", "!", "?", ":", ";")
_CLOSING = (".", "!", "?", ":", ";", ")", '"', "'", "”", "’")
_MARKER = re.compile(r"^\s*(?:\(?[0-9]{1,3}(?:\.[0-9]{1,3})*[.)]?|\(?[a-zA-Z][.)]|\([ivx]{1,4}\))\s*")
_LEADING_MARKERS = re.compile(r"^(?:\(?[a-zA-Z0-9]{1,3}(?:\.[0-9]{1,3})*[.)]\s+)*[\"'“‘«„(\[]?")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]\s|\(?[a-z0-9]{1,3}[.)]\s)")
# The next list item's marker left at a sentence's end ("…by this document. b."), not a number ("…is 100.").
_TRAILING_MARKER = re.compile(r"(?<=[.;:])\s+\(?[a-z][.)]$")
_SENTENCE_STOP = re.compile(r"[.!?][\"')\]”’]*(?=\s|$)")
_MINOR_WORDS = frozenset("a an and as at by for from in into of on or the to with without under per via vs".split())

_SOURCES_BLOCK = re.compile(r"<sources>(.*?)</sources>", re.DOTALL)
_SUPPLIED_BLOCK = re.compile(r"<supplied_context>(.*?)</supplied_context>", re.DOTALL)
_SOURCE = re.compile(r"<source\b([^>]*)>(.*?)</source\s*>", re.DOTALL)
_ATTRIBUTE = re.compile(r"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")


@dataclass(frozen=True, slots=True)
class Source:
    """One ``<source>`` element: its SourceRef, page, text and the title path of its section."""

    ref: str
    page: int | None
    text: str
    section: str | None = None


@dataclass(frozen=True, slots=True)
class _Sentence:
    source: Source
    text: str
    terms: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    """Adjacent word pairs, to prefer "default weight" side by side over the two words apart."""
    context: frozenset[str]
    """Terms of the sentence's section heading: it scopes the sentence."""
    name: frozenset[str]
    """Terms of the document's file name."""
    nearby: frozenset[str]
    """Terms of the sentences just before and after it in the same source."""


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
        section = values.get("section", "").strip() or None
        sources.append(Source(ref=ref, page=int(page) if page.isdigit() else None, text=text, section=section))
    return sources


def answer_question(question: str, sources: Sequence[Source]) -> str:
    """Up to three best-matching sentences, each followed by ``[ref]``; or :data:`NOT_FOUND`."""
    text, _ = answer_with_evidence(question, sources)
    return text


def answer_with_evidence(question: str, sources: Sequence[Source]) -> tuple[str, float]:
    """:func:`answer_question`, with the strongest evidence a sentence had (0 when there is none): only sentences
    whose evidence exceeds :data:`MIN_EVIDENCE` may answer, so the answer is :data:`NOT_FOUND` exactly when that
    strongest evidence does not."""
    main, context = split_context(question)
    shape = analyse(main)
    sentences = [sentence for source in sources for sentence in _source_sentences(source)]
    if not shape.terms or not sentences:
        return NOT_FOUND, 0.0
    weights = _idf_weights(shape.terms, sentences)
    context_terms = terms(" ".join(context)) - shape.terms
    pairs = _pairs(tokenize(main))
    query = " ".join([main, *context])
    candidates: list[tuple[float, float, int]] = []
    exact_definitions: set[int] = set()
    strongest = 0.0
    for ranked in rank(query, [sentence.text for sentence in sentences]):
        sentence = sentences[ranked.index]
        evidence = _evidence(shape, weights, sentence)
        strongest = max(strongest, evidence)
        if evidence <= MIN_EVIDENCE:
            continue
        # The evidence decides whether to answer; a definition of the asked-for words, the question's words side
        # by side, the words of the question a follow-up continues and BM25 (which also sees them) break ties.
        score = evidence * 10 + ranked.score + PAIR_BONUS * len(pairs & sentence.pairs)
        if shape.defined:
            plainness = defines(sentence.text, shape.defined, sentence.terms)
            score += DEFINITION_BONUS * plainness
            if plainness == 2:
                exact_definitions.add(ranked.index)
        if context_terms:
            score += len(context_terms & (sentence.terms | sentence.context | sentence.name)) / len(context_terms)
        candidates.append((score, evidence, ranked.index))
    if not candidates:
        return NOT_FOUND, strongest
    candidates.sort(key=lambda item: (-item[0], item[2]))
    best_score, _, best_index = candidates[0]
    chosen = [index for score, _, index in candidates[:MAX_SENTENCES] if score >= best_score * EXTRA_SENTENCE_RATIO]
    if best_index in exact_definitions:
        # '"X" means…' answers "what does X mean?" on its own: the sentences merely using X would dilute it.
        chosen = [index for index in chosen if index in exact_definitions]
    # Document order reads better than score order once the sentences are chosen.
    text = " ".join(f"{sentences[index].text} [{sentences[index].source.ref}]" for index in sorted(chosen))
    return text, strongest


def _evidence(shape: QuestionShape, weights: dict[str, float], sentence: _Sentence) -> float:
    """How well ``sentence`` answers: the idf-weighted share of the question's words it covers
    (:func:`_coverage`), lowered when it cannot hold the kind of answer expected (no number for "how many") or
    lacks the verb a "who" question asks about."""
    evidence = _coverage(shape.terms, shape.scope, weights, sentence)
    if not satisfies(sentence.text, shape.expect):
        evidence *= UNFIT_FACTOR
    if not shape.required <= sentence.terms | sentence.context:
        evidence *= UNFIT_FACTOR
    if shape.expect is Expect.YES_NO:
        evidence *= YES_NO_FACTOR
    return evidence


def _coverage(
    question_terms: frozenset[str], scope: frozenset[str], weights: dict[str, float], sentence: _Sentence
) -> float:
    """The idf-weighted share of the question's words a sentence covers.

    A word the sentence or its section heading holds counts; a word a neighbouring sentence holds, or a word
    related to one the sentence holds (a synonym, a derived form: :func:`orc.text.related.related_terms`),
    counts for part. Words that name the sentence's document ("the Apache License" for ``apache-2.0.txt``) say
    which document to look in, not what the answer says: for that document's sentences they are left out, so
    the rest of the question must be covered; for other documents' sentences they count as missing. So do the
    other words of the question's closing scope ("in the Apache *License*") when the scope names the document.
    """
    named = question_terms & sentence.name
    if named and scope & sentence.name:
        named |= scope
    # A naming word the sentence holds anyway counts as covered, like any other.
    named -= sentence.terms
    asked = question_terms - named or question_terms
    total = sum(weights[term] for term in asked)
    covered = 0.0
    for term in asked:
        if term in sentence.terms or term in sentence.context or SYNONYMS.get(term, _NONE) & sentence.terms:
            covered += weights[term]
        elif term in sentence.nearby:
            covered += weights[term] * NEARBY_CREDIT
        elif sentence.terms.intersection(related_terms(term)).difference(question_terms):
            covered += weights[term] * RELATED_CREDIT
    return covered / total if total > 0 else 0.0


def _pairs(tokens: Sequence[str]) -> frozenset[tuple[str, str]]:
    """Adjacent and next-but-one word pairs of a question ("default glob weight" → default·weight too)."""
    return frozenset(itertools.pairwise(tokens)) | frozenset(zip(tokens, tokens[2:], strict=False))


def _source_sentences(source: Source) -> list[_Sentence]:
    """The answerable sentences of one source, each with its heading, neighbours and file name as context."""
    name = _name_terms(source.ref.rsplit("::", 1)[0])
    pieces = _sentences(source.text, source.section)
    piece_tokens = [tokenize(text) for text, _ in pieces]
    piece_terms = [terms_of(tokens) for tokens in piece_tokens]
    result = []
    for index, (text, heading) in enumerate(pieces):
        whole = _whole(text, first=index == 0, last=index == len(pieces) - 1)
        if whole is None or _is_title(whole):
            continue
        tokens = piece_tokens[index] if whole == text else tokenize(whole)
        nearby = frozenset().union(*piece_terms[max(index - 1, 0) : index], *piece_terms[index + 1 : index + 2])
        result.append(
            _Sentence(
                source=source,
                text=whole,
                terms=piece_terms[index] if whole == text else terms_of(tokens),
                pairs=frozenset(itertools.pairwise(tokens)),
                context=terms(heading) if heading else frozenset(),
                name=name,
                nearby=nearby,
            )
        )
    return result


@lru_cache(maxsize=1024)
def _name_terms(filename: str) -> frozenset[str]:
    """The words of a file name, without its extension: ``apache-2.0.txt`` → apach, 2, 0."""
    stem = filename.rsplit(".", 1)[0] if "." in filename else filename
    return terms(re.sub(r"[-_.]+", " ", stem))


def _sentences(text: str, section: str | None = None) -> list[tuple[str, str]]:
    """Sentences of a span, each with the heading above it (``""`` when none).

    Headings and titles ("3. Security deposit", "Grant of Patent License.") are not answers: they become the
    context of the sentences under them; so is every title of the span's ``section`` path (the headings extraction
    found, however long), and the innermost one is the heading of the sentences before any in the span itself.
    A bare number or list marker ("9.", "b)") is joined to what follows.
    """
    merged: list[tuple[str, str]] = []
    pending = ""
    titles = {_heading_key(title) for title in section.split(SECTION_SEPARATOR)} if section else set()
    heading = section.rsplit(SECTION_SEPARATOR, 1)[-1] if section else ""
    for sentence in split_sentences(text):
        words = len(sentence.split())
        if (
            _is_title(sentence)
            or (words <= HEADING_WORDS and not sentence.endswith(_TERMINAL))
            or _heading_key(sentence) in titles
        ):
            heading = _MARKER.sub("", sentence).strip(" *")
            pending = ""
            continue
        if _MARKER.fullmatch(sentence):
            pending = f"{pending} {sentence}".strip()
            continue
        if words <= HEADING_WORDS and sentence.endswith((".", ":")):
            pending = f"{pending} {sentence}".strip()
            continue
        merged.append((f"{pending} {sentence}".strip(), heading))
        pending = ""
    if pending and not _MARKER.fullmatch(pending):
        merged.append((pending, heading))
    return merged


def _heading_key(text: str) -> str:
    """A title as compared with a heading line: without ``#`` marks, emphasis and spacing differences."""
    return " ".join(text.replace("*", " ").split()).strip(" #").casefold()


_LEADERS = re.compile(r"(?:\.\s?){5,}")
"""A table of contents' dot leaders ("Supported types . . . . . . 12"): an index line, not an answer."""


def _is_title(sentence: str) -> bool:
    """A section title rather than a sentence: a few words, most of them capitalised, no clause of its own
    ("2. Grant of Copyright License.", "* 6. Disclaimer of Warranty *", "TERMS AND CONDITIONS"), or a line of a
    table of contents."""
    if _LEADERS.search(sentence):
        return True
    text = _MARKER.sub("", sentence.strip(" *")).strip(" *.:")
    words = re.findall(r"[^\W\d_][\w'’-]*", text)
    if not words or len(words) > TITLE_WORDS or text.endswith((",", ";")):
        return False
    significant = [word for word in words if word.lower() not in _MINOR_WORDS]
    return bool(significant) and all(word[0].isupper() for word in significant)


def _starts_a_sentence(text: str) -> bool:
    """Whether ``text``, after a list marker and an opening quote, starts as a sentence does: not in lower case
    (any script: "État", "Дата" and "数据" start sentences), not as markup ("<program>", "{")."""
    rest = text[_LEADING_MARKERS.match(text).end() :]  # type: ignore[union-attr]  # the pattern always matches
    return bool(rest) and not rest[0].islower() and rest[0] not in "<{"


def _whole(text: str, *, first: bool, last: bool) -> str | None:
    """``text`` as a whole sentence, or None when it is a piece a span boundary cut off.

    A source's first piece may start in the middle of a sentence (the span before it holds the beginning), its
    last may stop short (the next span or page holds the rest): such a piece is left out, or cut back to the
    last sentence it does complete.
    """
    text = _TRAILING_MARKER.sub("", text).strip()
    if first and text[:1].islower() and not _MARKER.match(text):
        return None
    if not _starts_a_sentence(text):
        # A clause of a list ("(a) such Covered Software must…; and") or a template line ("<program> Copyright…")
        # does not stand as a sentence.
        return None
    if not text.endswith(_CLOSING):
        # A list item may go without a full stop ("- Rent: 1,450 euros"); other unclosed text is a title line
        # ("Version 2.0, January 2004") or the part of a sentence the span boundary left.
        if not last and _LIST_ITEM.match(text) and len(text.split()) > HEADING_WORDS:
            return text
        ends = [match.end() for match in _SENTENCE_STOP.finditer(text)]
        return text[: ends[-1]].strip() if ends else None
    return text


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
