"""What a question asks for, as far as words alone can tell: its topic terms and the kind of answer it expects.

The extractive answerer uses this to refuse sentences that share the question's topic but cannot answer it:
"What is the price of the sensor?" is not answered by a sentence about the sensor that names no amount.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from orc.text import tokenize

__all__ = ["SYNONYMS", "Expect", "QuestionShape", "analyse", "defines", "satisfies", "terms", "terms_of"]


class Expect(Enum):
    """The kind of answer a question expects."""

    ANYTHING = "anything"
    QUANTITY = "quantity"
    DURATION = "duration"
    TIME = "time"
    YES_NO = "yes_no"
    DEFINITION = "definition"
    HOLDER = "holder"
    REASON = "reason"
    PLACE = "place"
    METHOD = "method"
    PERMISSION = "permission"
    VALUE = "value"


@dataclass(frozen=True, slots=True)
class QuestionShape:
    """The topic terms of a question, the kind of answer it expects and, for a definition, the defined words."""

    terms: frozenset[str]
    expect: Expect
    defined: frozenset[str] = frozenset()
    required: frozenset[str] = frozenset()
    """Terms the answering sentence itself must hold: the verb of "Who founded…" (a sentence about the
    foundation that does not say who founded it does not answer)."""
    scope: frozenset[str] = frozenset()
    """Terms of a closing "in the Apache License", "under the MPL": they say where to look, not what to find."""


# "How much", "how many", "how long": the second word asks for a quantity; the text will not contain it.
_HOW_QUANTITY = re.compile(r"\bhow\s+(much|many|long|often|old|far|soon|big|large|high|low|heavy)\b", re.I)
# "What's the cap on…", "What is the maximum…": a limit is a quantity too; a sentence naming none does not answer.
_QUANTITY_NOUN = re.compile(
    r"^\s*what(?:['’]s|\s+(?:is|are|was|were))\s+(?:the\s+)?(?:\w+\s+)?"
    r"(price|cost|fee|amount|number|total|percentage|limit|cap|maximum|minimum|size)s?\b",
    re.I,
)
# "What exit code does halt_error use?", "Which status does it return?": a value — a number or a symbolic name.
_VALUE_NOUN = re.compile(
    r"^\s*(?:what|which)(?:'s|\s+(?:is|are|was|were))?\s+(?:the\s+)?(?:\w+\s+)?"
    r"(?:(?:exit|status|return|error)\s+codes?|(?:exit\s+|return\s+)?status(?:es)?|return\s+values?)\b",
    re.I,
)
# "How long does the licence last?" is answered by "perpetual" or "until…" as well as by "two years".
_HOW_LONG = re.compile(r"\b(?:for\s+)?how\s+long\b|\buntil\s+when\b", re.I)
_LASTING = re.compile(r"\b(?:last|run|stay|remain|apply|continue)s?\W*$", re.I)
_WHEN = re.compile(r"^\s*when\b", re.I)
# "What does X mean?", "What is meant by X?", "Define X", "What is a X?", "What does X refer to?"
_DEFINITION = re.compile(
    r"^\s*(?:what\s+(?:does|do)\s+it\s+mean\s+(?:to|for\s+\w+\s+to)\s+(?P<i>.+?)$"
    r"|what\s+(?:does|do)\s+(?P<a>.+?)\s+(?:mean|refer\s+to|stand\s+for)\b"
    r"|what\s+is\s+meant\s+by\s+(?P<b>.+?)$"
    r"|define\s+(?P<c>.+?)$"
    r"|what\s+(?:is|are)\s+(?:a|an)\s+(?P<d>.+?)$"
    r"|what\s+is\s+the\s+meaning\s+of\s+(?P<e>.+?)$"
    r"|how\s+(?:does|do)\s+.+?\s+define\s+(?P<f>.+?)$"
    r"|how\s+(?:is|are)\s+(?P<g>.+?)\s+defined\b)",
    re.I,
)
# The question's last prepositional phrase ("…of a Package under *the Artistic License*"): where to look.
_SCOPE = re.compile(r"^.*\b(?:under|in|of|for|from|within|according\s+to)\s+(?:the\s+)?([^?,]+?)\W*$", re.I | re.S)
_WHAT_IS_THE = re.compile(r"^\s*what\s+(?:is|are)\s+the\s+(.+?)$", re.I)
# "Who holds the copyright…", "Who owns it?": the answer names a holder (a copyright line, an owner).
_HOLDER = re.compile(r"^\s*who\s+(?:holds?|owns?|has)\b", re.I)
_WHO_VERB = re.compile(r"^\s*who\s+(?:(?:may|can|could|should|must|will|would|did|does|do)\s+)?([a-z]+)", re.I)
_COPULAS = frozenset({"is", "are", "was", "were", "be", "has", "have", "had"})
_HOLDER_VERBS = frozenset({"hold", "own", "has"})
_DEFINITION_CUES = frozenset({"mean", "meant", "refer", "defin", "stand", "definit"})
# Words that stand for any person or thing: "Can anyone…" is answered by "no one other than…".
_GENERIC = frozenset({"anyon", "anybodi", "someon", "somebodi", "anyth", "someth", "everyon", "everyth", "thing"})
_YES_NO = re.compile(
    r"^\s*(is|are|was|were|do|does|did|can|could|may|might|must|should|will|would|has|have|had)\b", re.I
)
_NUMBER_WORDS = (
    r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred|"
    r"thousand|million|once|twice|half|dozen|single|double"
)
# A digit inside a name ("S2", "EU868") is not a quantity.
_QUANTITY = re.compile(rf"(?<![^\W\d_])\d|\b({_NUMBER_WORDS})\b", re.I)
_TIME = re.compile(
    rf"(?<![^\W\d_])\d|\b({_NUMBER_WORDS}|january|february|march|april|may|june|july|august|september|october|november|"
    r"december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|before|after|until|"
    r"within|during|daily|weekly|monthly|annually|yearly|immediately)\b",
    re.I,
)
_DURATION = re.compile(
    r"\b(perpetual|permanent(?:ly)?|indefinite(?:ly)?|forever|irrevocabl[ey]|until|unless|as long as|"
    r"terminat\w*|expir\w*|for the (?:maximum )?duration|for the term)\b",
    re.I,
)
# An event answers "when" as well as a date does: "…ends upon written notice", "…as of the date…is filed".
_EVENT = re.compile(
    r"\b(when|whenever|upon|once|if|as of|as soon as|at the time|prior to|following|in the event|date|"
    r"provided that|after|before)\b",
    re.I,
)
_QUOTED_DEFINITION = re.compile(
    r"[\"“]([^\"”]{1,60})[\"”](?:\s+for\s+[\w\s]{1,40}?)?\s+(?:means|shall\s+mean|refers?\s+to|is|are|stands?\s+for)\b",
    re.I,
)
# "Why…": a reason. "How do I…", "Is there a way to…", "Which option…": a way to do it. "Can I…", "Am I allowed
# to…": what may or must be done.
_WHY = re.compile(r"^\s*why\b", re.I)
_WHERE = re.compile(r"^\s*where\b", re.I)
# A place: a path, a file or folder, a stream, a site, or a preposition of place before a name.
_PLACE = re.compile(
    r"/[\w.-]|\\|\b(?:files?|folders?|director(?:y|ies)|paths?|stdout|stderr|standard (?:output|error)|urls?|sites?|"
    r"pages?|repositor(?:y|ies)|locations?|https?:|e-?mail|address|located|stored|kept|written|placed|installed|"
    r"under|into|inside|beneath)\b|\b(?:in|on|at|to)\s+(?:the\s+)?[A-Z`$~.]",
    re.I,
)
_METHOD_QUESTION = re.compile(
    r"^\s*(?:how\s+(?:do|can|should|would|could)\s+(?:i|we|you|one)\b|how\s+to\b|is\s+there\s+(?:a|any)\s+way\b"
    r"|(?:what|which)\s+(?:option|flag|command|setting|switch|tool|program|variable)s?\b)",
    re.I,
)
_PERMISSION_QUESTION = re.compile(
    r"^\s*(?:(?:can|may|must|should)\s+(?:i|we|you|one)\b|(?:am|are)\s+(?:i|we|you)\s+allowed\b"
    r"|is\s+(?:it|one)\s+(?:allowed|okay|ok|safe|possible|permitted|fine)\b|do\s+(?:i|we|you)\s+(?:have|need)\s+to\b"
    # "What does being in the adm group let someone do?": what it lets one do.
    r"|what\s+(?:does|do|can|will)\s+.+?\s+(?:let|allow|permit|enable)s?\s+(?:\w+\s+)?(?:do|to)\b)",
    re.I,
)
_REASON = re.compile(
    r"\b(?:because|since|as a result|so that|in order to|to (?:avoid|prevent|allow|ensure|keep|make|reduce|help)|"
    r"thus|therefore|hence|due to|reasons?|otherwise|would|could|this (?:is|makes|means|allows|avoids|lets))\b",
    re.I,
)
_METHOD = re.compile(
    r"\b(?:use|using|run|running|set|setting|add|adding|pass|passing|specify|call|invoke|install|enable|disable|"
    r"option|command|flag|type|put|create|edit|choose|select|give|remove|delete|append|prefix|export|configure|"
    r"via|with|by)\b|`|--?[A-Za-z]|=|\$[A-Za-z]",
    re.I,
)
_MODALITY = re.compile(
    r"\b(?:may|can|cannot|must|shall|should|not|no|never|only|allowed|permitted|prohibited|forbidden|required|free "
    r"to|unless|except|needs? to|has to|have to|safe|unsafe|permission|permits?|allows?)\b|n't\b",
    re.I,
)
# A value: a number, a constant's name (FFI_BAD_ABI, Z_MEM_ERROR), a code span or a quoted value.
_VALUE = re.compile(r"(?<![^\W\d_])\d|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z]{3,}\b|`|\"[^\"]+\"|“[^”]+”")
_NUMBERED = re.compile(r"^\s*\(?\d{1,3}(?:\.\d{1,3})*[.)]\s+")
# A manual page's section after its name ("apt.conf(5)", "printf(3)") is no amount.
_MAN_REFERENCE = re.compile(r"(?<=[\w.-])\(\d[a-z]*\)")
_COPYRIGHT_LINE = re.compile(r"\bcopyright\s*(?:\(c\)|©|\d{4})", re.I)
_OWNER = re.compile(r"\b(owned by|owner|holder|belongs? to|held by|is the (?:license )?steward)\b", re.I)
_DEFINES = re.compile(
    r"\b(means|shall mean|refers? to|is defined as|is called|are called|stands? for|is any|is either|"
    r"is a work|is an? \w+ (?:that|which|of))\b|^\W*\w[\w\s.-]{0,40}[\"”]\s+(?:is|are)\b",
    re.I,
)
# Snowball leaves irregular verb forms alone; map the common ones so "paid" meets "pay", "taken" meets "take".
_IRREGULAR = {
    "taken": "take",
    "took": "take",
    "paid": "pay",
    "made": "make",
    "held": "hold",
    "kept": "keep",
    "sent": "send",
    "given": "give",
    "gave": "give",
    "written": "write",
    "wrote": "write",
    "chosen": "choos",
    "began": "begin",
    "begun": "begin",
    "spent": "spend",
    "sold": "sell",
    "bought": "buy",
    "built": "build",
    "met": "meet",
    "ran": "run",
    "grew": "grow",
    "grown": "grow",
    # British spellings meet American ones ("licence" in a question, "license" in the text).
    "licenc": "licens",
    "defenc": "defens",
    "offenc": "offens",
    "colour": "color",
    "behaviour": "behavior",
    "favour": "favor",
    "honour": "honor",
    "organis": "organ",
    "authoris": "author",
}


# Everyday words a question uses for what documents say otherwise: "the parking fee" is what "parking costs 80
# euros" gives, "let me use" is what "permission to use" grants, "the notice period" is "60 days' notice".
# Stems; each word is answered by any of its group.
_FAMILIES = (
    frozenset({"price", "cost", "fee", "charg", "pay", "rate", "euro", "dollar", "usd", "eur"}),
    frozenset({"let", "allow", "permit", "permiss", "grant", "may"}),
    frozenset({"period", "durat", "day", "week", "month", "year", "hour", "minut"}),
    # "Have xargs ask me before running each command" is what "prompt the user" does.
    frozenset({"ask", "prompt", "confirm"}),
    # "What do I need to download source indexes?" is what "A deb-src line is required to fetch source indexes" says.
    frozenset({"download", "fetch", "retriev"}),
)
SYNONYMS: dict[str, frozenset[str]] = {word: family for family in _FAMILIES for word in family}

ASKING_WEIGHT = 0.2
"""What a word people ask with weighs beside a word that says what they ask about."""
# Stems of the words people ask with rather than about: "Why is it a bad *idea* to *get* its own section *like*
# manfoo?" is about sections and manfoo. A document rarely uses them, so by rarity alone they would weigh most.
_ASKING = frozenset(
    """actual realli bad good idea like kind sort way thing stuff lot bit point get got make put let need want tri
    abl possibl happen know go come see help okay ok sure usual someon somebodi anyon anybodi anyth someth everyon
    everyth also even ever still instead rather anyway whatev exact must shall might ought""".split()
)


def asking_weight(term: str) -> float:
    """How much ``term`` (a stem) says about what is asked: 1, or :data:`ASKING_WEIGHT` for a word people ask
    with ("idea", "get", "kind")."""
    return ASKING_WEIGHT if term in _ASKING else 1.0


def terms(text: str) -> frozenset[str]:
    """Stemmed content words of ``text``, with irregular verb forms normalised."""
    return terms_of(tokenize(text))


def terms_of(tokens: Iterable[str]) -> frozenset[str]:
    """:func:`terms` of text already tokenized."""
    return frozenset(_IRREGULAR.get(term, term) for term in tokens)


def analyse(question: str) -> QuestionShape:
    """The topic terms of ``question`` and the kind of answer it expects."""
    topic = question
    defined: frozenset[str] = frozenset()
    definition = _DEFINITION.search(question)
    if _HOW_LONG.search(question):
        expect = Expect.DURATION
        topic = _LASTING.sub(" ", _HOW_LONG.sub(" ", question))
    elif _HOW_QUANTITY.search(question) or _QUANTITY_NOUN.search(question):
        expect = Expect.QUANTITY
        topic = _HOW_QUANTITY.sub(" ", question)
    elif _VALUE_NOUN.search(question):
        expect = Expect.VALUE
    elif _WHEN.search(question):
        expect = Expect.TIME
    elif _HOLDER.search(question):
        expect = Expect.HOLDER
    elif _WHY.search(question):
        expect = Expect.REASON
    elif _WHERE.search(question):
        expect = Expect.PLACE
    elif _METHOD_QUESTION.search(question):
        expect = Expect.METHOD
    elif _PERMISSION_QUESTION.search(question):
        expect = Expect.PERMISSION
    elif definition:
        expect = Expect.DEFINITION
        phrase = next(group for group in definition.groups() if group)
        # "What is a Larger Work under the MPL?": the defined words stop where the scope begins.
        phrase = re.split(r"\s+(?:under|in|of|for|according)\b|[?,]", phrase, maxsplit=1)[0]
        defined = terms(phrase) - _DEFINITION_CUES
    elif _YES_NO.search(question):
        expect = Expect.YES_NO
    else:
        expect = Expect.ANYTHING
        # "What is the source code of a work?" is often answered by the sentence that defines "source code".
        subject = _WHAT_IS_THE.search(question)
        if subject:
            defined = terms(re.split(r"\s+(?:under|in|of|for|according)\b|[?,]", subject.group(1), maxsplit=1)[0])
    found = terms(topic) - _GENERIC
    if expect is Expect.DEFINITION:
        found -= _DEFINITION_CUES
    elif expect is Expect.HOLDER:
        found -= _HOLDER_VERBS
    scope = _SCOPE.search(question)
    verb = _WHO_VERB.search(question)
    required = terms(verb.group(1)) if verb and verb.group(1).lower() not in _COPULAS else frozenset()
    return QuestionShape(
        required=required & found,
        terms=found or terms(topic),
        expect=expect,
        defined=defined,
        scope=terms(scope.group(1)) if scope else frozenset(),
    )


def satisfies(sentence: str, expect: Expect) -> bool:
    """Whether ``sentence`` can hold the kind of answer expected (a number for "how much", a date for "when")."""
    # A list item's number ("1. This LICENSE AGREEMENT…") is no amount and no date.
    sentence = _NUMBERED.sub("", sentence)
    sentence = _MAN_REFERENCE.sub("", sentence)
    if expect is Expect.QUANTITY:
        return bool(_QUANTITY.search(sentence))
    if expect is Expect.DURATION:
        return bool(_QUANTITY.search(sentence) or _DURATION.search(sentence))
    if expect is Expect.TIME:
        return bool(_TIME.search(sentence) or _EVENT.search(sentence))
    if expect is Expect.HOLDER:
        return bool(_COPYRIGHT_LINE.search(sentence) or _OWNER.search(sentence))
    if expect is Expect.REASON:
        return bool(_REASON.search(sentence))
    if expect is Expect.PLACE:
        return bool(_PLACE.search(sentence))
    if expect is Expect.METHOD:
        return bool(_METHOD.search(sentence))
    if expect is Expect.PERMISSION:
        return bool(_MODALITY.search(sentence))
    if expect is Expect.VALUE:
        return bool(_VALUE.search(sentence))
    return True


def defines(sentence: str, defined: frozenset[str], sentence_terms: frozenset[str] | None = None) -> int:
    """How plainly ``sentence`` defines the ``defined`` words: 2 for ``"X" means…`` (those words, or the word of
    them the definition quotes: "to *propagate* a work" is defined by ``To "propagate" a work means…``), 1 for
    another definition that names them (``…X refers to…``), 0 otherwise."""
    if not defined or not defined <= (terms(sentence) if sentence_terms is None else sentence_terms):
        return 0
    quoted = _QUOTED_DEFINITION.search(sentence)
    if quoted and (quoted_terms := terms(quoted.group(1))) and quoted_terms <= defined:
        return 2
    return 1 if _DEFINES.search(sentence) else 0
