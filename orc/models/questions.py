"""What a question asks for, as far as words alone can tell: its topic terms and the kind of answer it expects.

The extractive answerer uses this to refuse sentences that share the question's topic but cannot answer it:
"What is the price of the sensor?" is not answered by a sentence about the sensor that names no amount.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from orc.text import tokenize

__all__ = ["Expect", "QuestionShape", "analyse", "satisfies", "terms"]


class Expect(Enum):
    """The kind of answer a question expects."""

    ANYTHING = "anything"
    QUANTITY = "quantity"
    TIME = "time"
    YES_NO = "yes_no"


@dataclass(frozen=True, slots=True)
class QuestionShape:
    """The topic terms of a question and the kind of answer it expects."""

    terms: frozenset[str]
    expect: Expect


# "How much", "how many", "how long": the second word asks for a quantity; the text will not contain it.
_HOW_QUANTITY = re.compile(r"\bhow\s+(much|many|long|often|old|far|soon|big|large|high|low|heavy)\b", re.I)
_QUANTITY_NOUN = re.compile(
    r"^\s*what\s+(?:is|are|was|were)\s+(?:the\s+)?(?:\w+\s+)?(price|cost|fee|amount|number|total|percentage)s?\b",
    re.I,
)
_WHEN = re.compile(r"^\s*when\b", re.I)
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
}


def terms(text: str) -> frozenset[str]:
    """Stemmed content words of ``text``, with irregular verb forms normalised."""
    return frozenset(_IRREGULAR.get(term, term) for term in tokenize(text))


def analyse(question: str) -> QuestionShape:
    """The topic terms of ``question`` and the kind of answer it expects."""
    if _HOW_QUANTITY.search(question) or _QUANTITY_NOUN.search(question):
        expect = Expect.QUANTITY
    elif _WHEN.search(question):
        expect = Expect.TIME
    elif _YES_NO.search(question):
        expect = Expect.YES_NO
    else:
        expect = Expect.ANYTHING
    return QuestionShape(terms=terms(_HOW_QUANTITY.sub(" ", question)), expect=expect)


def satisfies(sentence: str, expect: Expect) -> bool:
    """Whether ``sentence`` can hold the kind of answer expected (a number for "how much", a date for "when")."""
    if expect is Expect.QUANTITY:
        return bool(_QUANTITY.search(sentence))
    if expect is Expect.TIME:
        return bool(_TIME.search(sentence))
    return True
