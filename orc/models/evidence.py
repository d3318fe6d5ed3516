"""Evidence: how well one passage answers a question, as far as its words can tell.

A passage's *evidence* is the share of the question's specific words it covers — each word weighted by how rare it
is among the passages at hand (so "tenant" in a lease counts for less than "sublet") and by how much it says at
all (the words people ask with, "idea", "get", "kind of", count for little); its heading counts as its own, its
neighbours and related words for part — lowered when it cannot hold the kind of answer the question expects (a
number for "how much", a date for "when"), or when it cannot state what is asked: no default, or another thing's
default ("the default *block size*" for the default compression level), for "what is the default…"; how things
were for "…now?"; having something for "…without it?"; a sibling option's item for "what does -T0 do?"; no month
named for "which months…?" — or when, after a premise ("The stack trace is huge. How should I read it?"), it
restates the premise and says nothing of what is asked. No rule per question word decides.

A question also has *anchors*: the names it keeps verbatim — a command's option, an environment variable, a
function, a version — which a passage must hold (itself or in its heading) to answer it, unless the anchor is the
documents' topic rather than a detail (it appears in many passages, or in the file name).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from orc.models.passages import Passage
from orc.models.questions import SYNONYMS, Expect, QuestionShape, analyse, asking_weight, satisfies, terms
from orc.models.rewriting import refers_back, split_context
from orc.text import STOPWORDS, stem, tokenize
from orc.text.related import related_terms

__all__ = ["Question", "evidence", "holds_anchors", "read_question", "weights"]

UNFIT_FACTOR = 0.5
"""Evidence kept by a passage that cannot hold the kind of answer expected (no number for "how many")."""
YES_NO_FACTOR = 0.77
"""Evidence kept for a yes/no question: it has few content words and each matters ("Can the tenant *sublet*?"),
so it needs about 0.7 of them covered where other questions need more than half."""
RELATED_CREDIT = 0.5
"""Share of a question word's weight that a related word (WordNet's synonym, derived form) earns."""
NEARBY_CREDIT = 0.5
"""Share of a question word's weight that the sentence before or after the passage earns."""
TOPIC_SHARE = 0.25
"""An anchor found in more than this share of a document's passages is the document's topic, not a detail."""

_NONE: frozenset[str] = frozenset()
# A name kept verbatim: an option (--indent, -j4), a variable or function (SYSTEMD_BUS_TIMEOUT, halt_error,
# $PASSWORD), a dotted or versioned name (Node.js, python3.11, zlib.h, x86), a release number ("OpenSSH 9.2":
# a sentence about another release, or none, does not answer what 9.2 changed).
_RELEASE_NUMBER = r"[0-9]+(?:\.[0-9]+)+"
_ANCHOR = re.compile(
    r"(?<![\w-])(?:--?[A-Za-z][\w-]*"
    r"|\$?[A-Za-z][A-Za-z0-9]*(?:[._][A-Za-z0-9]+)+"
    r"|\$[A-Za-z]\w*"
    r"|[A-Za-z]+[0-9][A-Za-z0-9]*"
    rf"|{_RELEASE_NUMBER})(?![\w-])"
)
_RELEASE = re.compile(rf"(?<![\w.-]){_RELEASE_NUMBER}(?![\w-])")
# A follow-up that names its own subject and continues the question before: "And Contributor?", "What about X?".
_CONTINUES = re.compile(r"^\W*(?:and|or|what about|how about)\b", re.IGNORECASE)
_DEFINING = frozenset({"mean", "defin", "definit", "refer", "stand"})
_NEGATION = re.compile(r"\b(?:not|no|never|none|neither|nor|without)\b|n't\b", re.IGNORECASE)
_NOT_ANCHORS = frozenset({"OK", "I", "ID", "FAQ", "PS", "TL;DR"})
# A question about how things are now ("which value wins *now*?") is not answered by how they were: "Previously if
# an environment variable was multiply specified the last set value would have been used."
_NOW = re.compile(r"\b(?:now|currently|nowadays|these\s+days|anymore|any\s+more)\b", re.IGNORECASE)
_PAST = re.compile(
    r"^\W*(?:previously|formerly|historically|in\s+the\s+past|in\s+earlier\s+(?:versions|releases)"
    r"|until\s+recently)\b",
    re.IGNORECASE,
)
# The options a list item opens with ("○ --auto-threads={physical,logical} (default: physical): …", "-T#,
# --threads=#: …", "--MOUSE Like --mouse, except…"): the item is about them.
_OPENING_OPTION = re.compile(r"^(?:[-*•+○◦▪‣]\s+)?(--?[A-Za-z][\w-]*)\S*(?:\s+or)?\s+")
# "…when dpkg-buildpackage runs *without -r*?" is not answered by what happens when it "is called *with* -r".
_WITHOUT = re.compile(r"\bwithout\s+(?:a\s+|an\s+|the\s+|any\s+)?([\w-]+)", re.IGNORECASE)
_DEFAULT = "default"
_DEFAULT_VALUE = re.compile(
    r"(?<![^\W\d_])\d|\b(?:unless|otherwise|if\s+(?:not|no|none|unset|omitted|absent|empty)"
    r"|when\s+(?:not|no)|if\s+\w+\s+(?:is|are)\s+(?:not|unset|omitted|absent|empty))\b",
    re.IGNORECASE,
)
# "In which months…?", "On what day…?": the answer names one. A month by its name (capitalised: "may" is a verb),
# a day by its weekday or its date, a year by its number.
_CALENDAR_ASKED = re.compile(r"\b(?:which|what)\s+(month|day|weekday|year)s?\b", re.IGNORECASE)
_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_CALENDAR_NAMES = {
    "month": re.compile(rf"\b(?:{_MONTHS})\b"),
    "day": re.compile(rf"\b(?:{_WEEKDAYS})\b|(?<![\w.])\d{{1,2}}(?:st|nd|rd|th)?(?![\w.])", re.IGNORECASE),
    "weekday": re.compile(rf"\b(?:{_WEEKDAYS})\b", re.IGNORECASE),
    "year": re.compile(r"(?<![\w.])(?:1[89]|2[0-9])[0-9]{2}(?![\w.])"),
}
# A question that first says what happened ("A stack trace in the report is huge and confusing. How should I read
# it?"): the premise ends where a sentence closes before a capital letter ("e.g. on NFS" goes on).
_PREMISE_END = re.compile(r"(?<=[\w)'\"`][.!])\s+(?=[A-Z])")
# What a "default" qualifies, as written: "The default *block size* increases…", "the default *suppression set*
# hides…". "By default", "as default", "default:" and "defaults to" qualify nothing: they speak of the setting the
# sentence is about.
_QUALIFIED = re.compile(
    r"(?<!\bby )(?<!\bas )(?<![\w-])default\s+([A-Za-z][\w-]*)(?:\s+([A-Za-z][\w-]*))?", re.IGNORECASE
)
# The function words a qualified noun stops at ("the default *is*…"); "file" is a noun here ("the default
# suppression *file*"), though search leaves it out as a word nearly every question about a document has.
_FUNCTION_WORDS = STOPWORDS - {"file", "files", "document", "documents", "give", "show", "find", "tell", "say"}
# "default" as a word of its own, not inside a name ("--default-timeout", "PIP_DEFAULT_TIMEOUT").
_SPOKEN_DEFAULT = re.compile(r"(?<![\w-])default(?:s|ed)?(?![\w-])", re.IGNORECASE)
# What any setting has: "the default *value* is…" qualifies the setting the sentence is about. As written: the stem
# of "setting" is "set", which a "default suppression *set*" is not.
_ANY_SETTING = frozenset(
    "value values setting settings option options behaviour behavior choice configuration mode".split()
)


@dataclass(frozen=True, slots=True)
class Question:
    """A question as the answerer reads it."""

    text: str
    """The question itself (a follow-up's words without the context carried over)."""
    shape: QuestionShape
    context_terms: frozenset[str]
    """Words of the question a follow-up continues: they steer the choice, never make an answer."""
    pairs: frozenset[tuple[str, str]]
    anchors: tuple[str, ...]
    """The names the question keeps verbatim, lower-cased."""
    query: str
    """What BM25 ranks the passages by: the question and the words it continues."""
    negated: bool
    """The question itself denies ("Which rights are *not* waived?"): a denying sentence may answer it."""
    elliptical: bool
    """A follow-up that points back and names at most one thing itself ("and nobody?", "an example of it?"): its
    topic is the question before. "Where is the flat?" names its topic, however short."""
    asks_default: bool = False
    """It asks what holds by default ("What is the default for FAIL_DELAY?"): a sentence about the setting that
    gives no default, or gives the default of something else, does not answer."""
    defaulted: tuple[str, ...] = ()
    """The stems of the words the question's own "default" qualifies ("the default *suppression file*"), as
    written; ``()`` for "by default", "the default for X"."""
    words: frozenset[str] = frozenset()
    """The stems of every word of the question, function words and "file" included."""
    calendar: str = ""
    """What "which months/days/years" asks to be named ("month"); ``""`` when it asks for none."""
    asked_terms: frozenset[str] = frozenset()
    """After a premise ("A stack trace … is huge and confusing."), the words of an asking that points back to it
    ("How should I *read* it?"): a sentence must speak to them, not only restate the premise. Empty without a
    premise, or when the asking names its own subject ("What command works instead?")."""
    asks_now: bool = False
    """It asks how things are now: a sentence about how they were does not answer."""
    without: str = ""
    """What the question asks to go without ("-r" in "…runs without -r?"), lower-cased; ``""`` when nothing."""


def read_question(question: str) -> Question:
    """The question's words, the kind of answer it expects and its anchors."""
    main, context = split_context(question)
    shape = analyse(main)
    context_terms = terms(" ".join(context)) - shape.terms
    if _CONTINUES.match(main) and not shape.defined and shape.expect is Expect.ANYTHING and _DEFINING & context_terms:
        # "And Contributor?" after "What does Contribution mean?" asks what Contributor means.
        shape = dataclasses.replace(shape, expect=Expect.DEFINITION, defined=shape.terms)
    return Question(
        text=main,
        shape=shape,
        context_terms=context_terms,
        pairs=_pairs(tokenize(main)),
        anchors=tuple(
            dict.fromkeys(
                [
                    *(match.group(0).lower() for match in _ANCHOR.finditer(main) if match.group(0) not in _NOT_ANCHORS),
                    # A follow-up stays in the release the question before asked about ("And the MAC? (context:
                    # default cipher OpenSSH 9.2)"); the other words carried over only steer.
                    *(release for part in context for release in _RELEASE.findall(part)),
                ]
            )
        ),
        query=" ".join([main, *context]),
        negated=bool(_NEGATION.search(main)),
        elliptical=bool(context_terms)
        and refers_back(main)
        and sum(asking_weight(term) == 1 for term in shape.terms) <= 1,
        asks_default=_DEFAULT in shape.terms and shape.expect not in (Expect.YES_NO, Expect.PERMISSION),
        asks_now=bool(_NOW.search(main)),
        defaulted=tuple(stem(word) for word in next(iter(_qualified(main)), ())),
        words=frozenset(tokenize(main, keep_stopwords=True)),
        calendar=(asked.group(1).lower() if (asked := _CALENDAR_ASKED.search(main)) else ""),
        asked_terms=_asked_after_premise(main),
        without=(absent.group(1).lower() if (absent := _WITHOUT.search(main)) else ""),
    )


def _asked_after_premise(question: str) -> frozenset[str]:
    """The words of what ``question`` asks of the premise it opens with, when the asking points back to it ("How
    should I read *it*?"), those that say what it asks; empty otherwise."""
    *premise, asking = _PREMISE_END.split(question.strip())
    if not premise or not refers_back(asking):
        return frozenset()
    return frozenset(term for term in terms(asking) if asking_weight(term) == 1)


def weights(question: Question, found: Sequence[Passage]) -> dict[str, float]:
    """The weight of each question word: its inverse frequency among ``found``, times how much it says at all.

    A word found nowhere is weighed like a word found once: an unknown word is as likely a paraphrase ("maximum"
    for "up to") as a sign that the documents do not cover the question.
    """
    words = question.shape.terms
    counts: Counter[str] = Counter()
    for passage in found:
        counts.update(words & passage.terms)
    total = len(found)
    return {term: math.log((total + 1) / (max(counts[term], 1) + 0.5)) * asking_weight(term) for term in words}


def evidence(question: Question, weights: dict[str, float], passage: Passage) -> float:
    """How well ``passage`` answers: the weighted share of the question's words it covers (:func:`_coverage`),
    lowered when it cannot hold the kind of answer expected (no number for "how many") or lacks the verb a "who"
    question asks about."""
    shape = question.shape
    found = _coverage(shape.terms, shape.scope, weights, passage)
    if not satisfies(passage.text, shape.expect):
        found *= UNFIT_FACTOR
    if not shape.required <= passage.terms | passage.context:
        found *= UNFIT_FACTOR
    if shape.expect in (Expect.YES_NO, Expect.PERMISSION):
        found *= YES_NO_FACTOR
    if question.elliptical:
        # "And nobody?", "Give me an example of it": the topic is the question before; a passage on another topic
        # merely using the one word is not the answer.
        around = passage.terms | passage.context | passage.nearby | passage.name
        if len(question.context_terms & around) * 2 < len(question.context_terms):
            found *= UNFIT_FACTOR
    if not _states_what_is_asked(question, passage):
        found *= UNFIT_FACTOR
    if question.asked_terms and not any(_holds(term, passage) for term in question.asked_terms):
        # It restates the premise ("Stack traces can get quite large, and be confusing") and says nothing of
        # what is asked about it.
        found *= UNFIT_FACTOR
    return found


def _holds(term: str, passage: Passage) -> bool:
    """Whether ``passage`` (or its heading) holds ``term``, a synonym or a related word of it."""
    held = passage.terms | passage.context
    return term in held or bool(SYNONYMS.get(term, _NONE) & held) or bool(held.intersection(related_terms(term)))


def _states_what_is_asked(question: Question, passage: Passage) -> bool:
    """Whether ``passage`` can state what the question asks, beyond sharing its words: the default of what it asks
    about when it asks for one, the present when it asks about now, the case without something rather than with
    it, the option it asks about rather than a sibling option's item, and a month (day, year) by name when it asks
    which."""
    if question.asks_default and not _gives_default(question, passage):
        return False
    if question.asks_now and _PAST.match(passage.text):
        return False
    if question.calendar and not _CALENDAR_NAMES[question.calendar].search(passage.text):
        # "The release date within that month…" names no month.
        return False
    if question.without and _with(question.without, passage.text):
        return False
    asked = [anchor for anchor in question.anchors if anchor.startswith("-")]
    opening = (_opening_options(passage.text) or _opening_options(passage.lead)) if asked else []
    # "-T0" is asked about by the item of "-T#": an option's value follows its name.
    return not opening or any(anchor.startswith(option) for anchor in asked for option in opening)


def _with(thing: str, text: str) -> bool:
    """Whether ``text`` speaks of having ``thing`` ("is called with "-r/--root-command"") and never of lacking
    it."""
    having = re.search(rf"\bwith\s+\W*{re.escape(thing)}(?![\w-])", text, re.IGNORECASE)
    return bool(having) and not re.search(r"\bwithout\b", text, re.IGNORECASE)


def _gives_default(question: Question, passage: Passage) -> bool:
    """Whether ``passage`` can say what holds by default for what the question asks about: it says "default" of
    that ("the default *compression level*", "the default is…", "by default") rather than only of something else
    ("The default *block size* increases when the compression level is increased"), or, saying no "default",
    names the condition under which something holds ("unless…", "if not set…") or gives a value ("The server
    listens on port 8080"). A name holding "default" ("`PIP_DEFAULT_TIMEOUT=60` is the same as
    `--default-timeout=60`") names a setting; it does not say what holds when nobody sets it."""
    if _DEFAULT not in passage.terms:
        return bool(_DEFAULT_VALUE.search(passage.text))
    spoken = _SPOKEN_DEFAULT.findall(passage.text)
    qualified = _qualified(passage.text)
    # A "default" that qualifies no word ("by default", "defaults to", "(default: 6)") is the sentence's own.
    return len(qualified) < len(spoken) or any(_qualifies_the_asked(question, words) for words in qualified)


def _qualified(text: str) -> list[tuple[str, ...]]:
    """The words each "default" of ``text`` qualifies, lower-cased, up to two and up to a function word, for each
    "default" that qualifies one ("the default *block size* increases" → ``("block", "size")``)."""
    found = []
    for match in _QUALIFIED.finditer(text):
        words: list[str] = []
        for word in filter(None, match.groups()):
            if word.lower() in _FUNCTION_WORDS:
                break
            words.append(word.lower())
        if words:
            found.append(tuple(words))
    return found


def _qualifies_the_asked(question: Question, qualified: tuple[str, ...]) -> bool:
    """Whether a passage's "default <qualified>" is the default the question asks about: what it qualifies is any
    setting's ("value"), or the question's words; or it opens with a word of the question and holds the noun
    the question's own "default" qualifies ("the default *timeout* expires…" for "the default connection
    *timeout*", not "the default *suppression set*" for "the default suppression *file*")."""
    if _ANY_SETTING.intersection(qualified):
        return True
    stems = [stem(word) for word in qualified]
    if set(stems) <= question.words:
        return True
    return stems[0] in question.words and (not question.defaulted or question.defaulted[-1] in stems)


def _opening_options(text: str) -> list[str]:
    """The options ``text`` opens with, lower-cased ("-T#, --threads=#: Compress…" → ``-t``, ``--threads``)."""
    found = []
    rest = text.strip()
    while match := _OPENING_OPTION.match(rest):
        found.append(match.group(1).lower())
        rest = rest[match.end() :]
    return found


def holds_anchors(question: Question, passage: Passage, found: Sequence[Passage]) -> bool:
    """Whether ``passage`` (itself, its heading, the FAQ question it answers, its list item's lead or the sentence
    before it) holds every anchor of the question that is a detail of its document rather than its topic."""
    if not question.anchors:
        return True
    here = " ".join(
        [passage.heading, passage.asked, passage.lead, passage.before, passage.text, passage.source.section or ""]
    ).lower()
    document = passage.source.ref.rsplit("::", 1)[0].lower()
    siblings = [
        other for other in found if other.source.ref.rsplit("::", 1)[0] == passage.source.ref.rsplit("::", 1)[0]
    ]
    for anchor in question.anchors:
        if anchor in here or anchor.strip("-$") in document:
            continue
        spread = sum(1 for other in siblings if anchor in other.text.lower())
        if spread <= TOPIC_SHARE * len(siblings):
            return False
    return True


def _coverage(
    question_terms: frozenset[str], scope: frozenset[str], weights: dict[str, float], passage: Passage
) -> float:
    """The weighted share of the question's words a passage covers.

    A word the passage or its section heading holds counts; a word a neighbouring sentence holds, or a word
    related to one the passage holds (a synonym, a derived form: :func:`orc.text.related.related_terms`),
    counts for part. Words that name the passage's document ("the Apache License" for ``apache-2.0.txt``) say
    which document to look in, not what the answer says: for that document's passages they are left out, so
    the rest of the question must be covered; for other documents' passages they count as missing. So do the
    other words of the question's closing scope ("in the Apache *License*") when the scope names the document
    (most of its words are the file name's).
    """
    named = question_terms & passage.name
    if named and len(scope & passage.name) * 2 >= len(scope):
        named |= scope
    # A naming word the passage holds anyway counts as covered, like any other.
    named -= passage.terms
    asked = question_terms - named or question_terms
    total = sum(weights[term] for term in asked)
    covered = 0.0
    for term in asked:
        if term in passage.terms or term in passage.context or SYNONYMS.get(term, _NONE) & passage.terms:
            covered += weights[term]
        elif term in passage.nearby:
            covered += weights[term] * NEARBY_CREDIT
        elif passage.terms.intersection(related_terms(term)).difference(question_terms):
            covered += weights[term] * RELATED_CREDIT
    return covered / total if total > 0 else 0.0


def _pairs(tokens: Sequence[str]) -> frozenset[tuple[str, str]]:
    """Adjacent and next-but-one word pairs of a question ("default glob weight" → default·weight too)."""
    return frozenset(itertools.pairwise(tokens)) | frozenset(zip(tokens, tokens[2:], strict=False))
