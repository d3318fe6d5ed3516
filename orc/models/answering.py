"""Extractive answering: quote the one sentence of the sources that answers the question, and cite it.

Each passage (:mod:`orc.models.passages`) of the sources gets one *evidence* figure (:mod:`orc.models.evidence`).
The answer is the passage with the most, provided it exceeds the one calibrated threshold :data:`MIN_EVIDENCE` and
holds the names the question keeps verbatim (its anchors); otherwise the answer is :data:`NOT_FOUND` — an honest
decline beats loosely related text, and the turn lists the closest passages as places to look
(:mod:`orc.models.places`). A second sentence joins the first only when it is its neighbour in the same passage
of the document and answers as well on its own, when the first leans on it ("This can be useful…" quotes what
"this" is), or when it draws the first one's consequence ("Thus…", "What this does in bc is…"): never a sentence
from elsewhere. The first sentence of an FAQ's answer is its reply, and preferred to the sentences after it.

Two more checks make an answer one a reader can trust: the sentence-level ranking must agree with retrieval's span
ranking (a sentence outside the best-ranked span answers only when it covers the whole question: words that also
fit a sentence elsewhere are not enough), and a follow-up that continues a question about one document ("And with
a capital E? (context: less)") is answered from that document only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from orc.models.declines import NOT_FOUND
from orc.models.evidence import YES_NO_FACTOR, Question, evidence, holds_anchors, read_question, weights
from orc.models.passages import Passage, Source, find_sources, open_question, parse_sources, passages
from orc.models.questions import Expect, defines
from orc.text import rank

__all__ = [
    "MIN_EVIDENCE",
    "NOT_FOUND",
    "Candidate",
    "Source",
    "answer_question",
    "answer_with_evidence",
    "candidates",
    "find_sources",
    "parse_sources",
]

MIN_EVIDENCE = 0.6
"""The one decline threshold: an answer needs a passage whose evidence (:func:`orc.models.evidence.evidence`)
exceeds it (half the question is not enough: "How do I reset my password?" is not answered by a sentence about
passwords). Measured as the share of answers citing the sentence that answers, against declines, on questions in
users' own words (``bench/README.md``)."""
EXTRA_SENTENCE_RATIO = 0.75
"""A neighbouring sentence joins the answer when its score is at least this share of the best one's."""
RANK_WEIGHT = 0.1
"""What BM25 (as a share of the best BM25 score) adds to a candidate's evidence to order the candidates."""
PAIR_WEIGHT = 0.05
"""Added per pair of the question's words the passage has side by side ("default weight")."""
DEFINITION_WEIGHT = 0.2
"""Added (twice for ``"X" means…``) for a passage that defines what "what does X mean" asks."""
NEGATED_WEIGHT = 0.15
"""Taken from a sentence that denies ("No trademark or patent rights … are waived") when the question asks what
is, not whether: "What rights does the affirmer waive?" is answered by the sentence that waives them."""
CONTEXT_WEIGHT = 0.1
"""Added, in proportion, for the words of the question a follow-up continues that the passage holds."""
OPENING_WEIGHT = 0.2
"""Added for the first sentence of an FAQ's answer: the question's words are the FAQ question's, which scopes
every sentence of its answer alike, and the first sentence replies to it ("That would be nice, but it is not
possible…")."""
CLOSE_CALL = 0.05
"""A sentence that does not cover the whole question does not answer when a sentence elsewhere (not its neighbour)
scores within this of it: words alone cannot tell which of the two answers."""
FULL_COVERAGE = 0.85
"""The share of the most evidence a question allows (:data:`orc.models.evidence.YES_NO_FACTOR` for a yes/no
question, else 1) that a sentence outside retrieval's best span needs to answer. On the tuning sets
(``bench/README.md``) sentences answering from a lower-ranked span with less were wrong 8 times in 12."""


YES_NO_EXPECTS = frozenset({Expect.YES_NO, Expect.PERMISSION})
# A sentence that opens by denying: "No trademark…", "Neither…", "None of…".
_DENIES = re.compile(r"^\W*(?:\(?[a-z0-9]{1,3}[.)]\s+)?(?:no|neither|none|nothing|nor)\b", re.IGNORECASE)
_SEQUEL = re.compile(
    r"^\W*(?:thus|hence|therefore|consequently|so|as\s+a\s+result|this\s+means|that\s+is|what\s+this\s+does)\b",
    re.IGNORECASE,
)
# A sentence whose subject is the one before it: "This can be useful…", "It has the special property…".
_LEANS_BACK = re.compile(r"^\W*(?:this|that|these|those|it|they|such)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A passage that may answer, with its evidence and the score that orders the candidates."""

    passage: Passage
    evidence: float
    score: float
    exact_definition: bool = False


def answer_question(question: str, sources: Sequence[Source]) -> str:
    """The sentence that answers, followed by ``[ref]`` (and its neighbour when it answers too); or
    :data:`NOT_FOUND`."""
    text, _ = answer_with_evidence(question, sources)
    return text


def answer_with_evidence(question: str, sources: Sequence[Source]) -> tuple[str, float]:
    """:func:`answer_question`, with the strongest evidence a passage had (0 when there is none)."""
    read = read_question(question)
    found = [passage for source in sources for passage in passages(source, _question_before(source, sources))]
    ranked, strongest = candidates(read, found)
    answering = [candidate for candidate in ranked if candidate.evidence > MIN_EVIDENCE]
    if not answering or not _agrees_with_retrieval(read, answering[0], sources) or _close_call(read, ranked):
        return NOT_FOUND, strongest
    best = answering[0]
    chosen = [best]
    if not best.exact_definition:
        # '"X" means…' answers "what does X mean?" on its own; otherwise the sentence just before or after it in
        # the same passage may finish the answer ("Thus, anyone can…"), if it answers as well on its own.
        chosen += [
            candidate
            for candidate in answering[1:]
            if candidate.passage.source is best.passage.source
            and abs(candidate.passage.position - best.passage.position) == 1
            and candidate.score >= best.score * EXTRA_SENTENCE_RATIO
        ][:1]
        referent = _referent(best.passage, found)
        if referent is not None and all(candidate.passage is not referent for candidate in chosen):
            chosen.append(Candidate(referent, 0.0, 0.0))
        sequel = _sequel(best.passage, found)
        if sequel is not None and all(candidate.passage is not sequel for candidate in chosen):
            chosen.append(Candidate(sequel, 0.0, 0.0))
    # Document order reads better than score order.
    chosen.sort(key=lambda candidate: candidate.passage.position)
    return " ".join(f"{c.passage.text} [{c.passage.source.ref}]" for c in chosen), strongest


def _most_evidence(question: Question) -> float:
    """The evidence a sentence covering the whole question has."""
    return YES_NO_FACTOR if question.shape.expect in YES_NO_EXPECTS else 1.0


def _close_call(question: Question, ranked: Sequence[Candidate]) -> bool:
    """Whether the best candidate covers only part of the question and a rival elsewhere scores about as well."""
    best = ranked[0]
    if best.evidence >= _most_evidence(question):
        return False
    rivals = (candidate for candidate in ranked[1:] if not _same_answer(candidate.passage, best.passage))
    rival = next(rivals, None)
    return rival is not None and best.score - rival.score < CLOSE_CALL


def _question_before(source: Source, sources: Sequence[Source]) -> str:
    """The FAQ question the span before ``source`` in its document ends with, when that span is among
    ``sources``: ``source`` opens with its answer."""
    document, _, span = source.ref.rpartition("::")
    if not span[1:].isdigit():
        return ""
    before = f"{document}::{span[0]}{int(span[1:]) - 1}"
    return next((open_question(other) for other in sources if other.ref == before), "")


def _same_answer(one: Passage, other: Passage) -> bool:
    """Whether two passages are parts of one answer: neighbours in a span, or sentences of the same FAQ answer
    there."""
    if one.source != other.source:
        return False
    return abs(one.position - other.position) == 1 or bool(one.asked and one.asked == other.asked)


def _agrees_with_retrieval(question: Question, best: Candidate, sources: Sequence[Source]) -> bool:
    """Whether ``best`` is in retrieval's best-ranked span, or covers the whole question (:data:`FULL_COVERAGE`)."""
    if sources and best.passage.source == sources[0]:
        return True
    return best.evidence >= FULL_COVERAGE * _most_evidence(question)


def _referent(passage: Passage, found: Sequence[Passage]) -> Passage | None:
    """The sentence just before ``passage`` in its span when ``passage`` leans on it ("This can be useful…")."""
    if not _LEANS_BACK.match(passage.text):
        return None
    return next(
        (other for other in found if other.source == passage.source and other.position == passage.position - 1),
        None,
    )


def _sequel(passage: Passage, found: Sequence[Passage]) -> Passage | None:
    """The sentence just after ``passage`` in its span when it draws the consequence of it ("Thus, anyone can…")."""
    return next(
        (
            other
            for other in found
            if other.source == passage.source and other.position == passage.position + 1 and _SEQUEL.match(other.text)
        ),
        None,
    )


def _named_documents(question: Question, found: Sequence[Passage]) -> set[str]:
    """The documents a follow-up's carried-over words name ("(context: less)" → ``less-manual.txt``), when the
    question itself names none: its answer is in them. Empty when there is no such restriction."""
    if not question.context_terms:
        return set()
    names = {passage.source.ref.rsplit("::", 1)[0]: passage.name for passage in found}
    if any(name & question.shape.terms for name in names.values()):
        return set()
    # A word every file name has ("manual") names none of them.
    shared = frozenset.intersection(*names.values()) if names else frozenset()
    named = {document for document, name in names.items() if (name - shared) & question.context_terms}
    return named if len(named) < len(names) else set()


def candidates(question: Question, found: Sequence[Passage]) -> tuple[list[Candidate], float]:
    """Every passage that holds the question's anchors (and, for a follow-up about one document, is in it), best
    first, and the strongest evidence of all."""
    if not question.shape.terms or not found:
        return [], 0.0
    named = _named_documents(question, found)
    if named:
        found = [passage for passage in found if passage.source.ref.rsplit("::", 1)[0] in named]
    weighed = weights(question, found)
    result: list[tuple[float, int, Candidate]] = []
    strongest = 0.0
    ranking = rank(question.query, [passage.text for passage in found])
    top = ranking[0].score if ranking and ranking[0].score > 0 else 1.0
    for ranked in ranking:
        passage = found[ranked.index]
        strength = evidence(question, weighed, passage)
        if passage.text.endswith(":") or not holds_anchors(question, passage, found):
            # "The following environment variables are processed by bc:" announces what follows; it says nothing.
            continue
        strongest = max(strongest, strength)
        # The evidence decides whether to answer and mostly which passage; a definition of the asked-for words,
        # the question's words side by side, the words a follow-up continues and BM25 break near ties.
        score = strength + RANK_WEIGHT * ranked.score / top + PAIR_WEIGHT * len(question.pairs & passage.pairs)
        plainness = defines(passage.text, question.shape.defined, passage.terms) if question.shape.defined else 0
        score += DEFINITION_WEIGHT * plainness + OPENING_WEIGHT * passage.opens_answer
        if (
            question.shape.expect not in YES_NO_EXPECTS
            and not question.negated
            and _DENIES.match(passage.text)
            # An FAQ's reply that opens by denying ("No. The files in contrib are not part of zlib.") answers.
            and not passage.opens_answer
        ):
            score -= NEGATED_WEIGHT
        if question.context_terms:
            covered = question.context_terms & (passage.terms | passage.context | passage.name)
            score += CONTEXT_WEIGHT * len(covered) / len(question.context_terms)
        result.append((-score, ranked.index, Candidate(passage, strength, score, exact_definition=plainness == 2)))
    result.sort(key=lambda item: item[:2])
    return [candidate for _, _, candidate in result], strongest
