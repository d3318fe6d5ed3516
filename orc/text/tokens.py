"""Tokens: the lower-cased, stemmed content words of a text — the one tokenizer every ranking in orc uses.

Documents are tokenized in worker threads (several uploads are processed at once) while questions are tokenized
on the event loop, so stemming must be thread-safe: a Snowball stemmer keeps its working state in the object
between calls, and one shared across threads raised ``IndexError`` or returned another word's stem. Each thread
gets a stemmer of its own; the stems are cached once for the whole process.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

import Stemmer

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

# Function words carry no topic; dropping them keeps a question's content words in charge of the score.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too under until up very
    was we were what when where which while who whom why will with would you your yours yourself yourselves
    tell please document documents file files say says said according give show find""".split()
)

# The first halves of contractions that are not stop words themselves ("don't", "won't", "let's").
_CONTRACTED = frozenset({"don", "doesn", "didn", "isn", "aren", "wasn", "weren", "won", "let", "that", "what"})

_per_thread = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer: Stemmer.Stemmer | None = getattr(_per_thread, "stemmer", None)
    if stemmer is None:
        # PyStemmer's own cache would be one more per thread: the process-wide cache below serves them all.
        stemmer = _per_thread.stemmer = Stemmer.Stemmer("english", 0)
    return stemmer


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The English Snowball stem of a lower-cased word (cached; safe to call from any thread)."""
    return str(_stemmer().stemWord(word))


def words(text: str) -> list[str]:
    """The words of ``text`` as written (letters and digits, with an inner apostrophe: "don't", "l’eau"): what
    :func:`tokenize` lower-cases and stems."""
    return _WORD.findall(text)


_CONTENT_WORDS: dict[str, str] = {}
"""A word as the text spells it → its stem, or ``""`` for a function word: indexing a million spans looks up the
same few thousand words again and again, and one dictionary probe per word costs half of lower-casing, filtering
and stemming it each time."""
_CONTENT_WORDS_LIMIT = 1 << 18


def _content_word(word: str) -> str:
    lowered = word.lower().replace("’", "'")
    found = "" if lowered in STOPWORDS or ("'" in lowered and _contracted(lowered)) else stem(lowered)
    if len(_CONTENT_WORDS) >= _CONTENT_WORDS_LIMIT:  # a corpus of ids and numbers must not grow it forever
        _CONTENT_WORDS.clear()
    _CONTENT_WORDS[word] = found
    return found


def tokenize(text: str, *, keep_stopwords: bool = False) -> list[str]:
    """Lower-cased, stemmed content words of ``text``, compatibility-normalized first: a PDF's ligatures
    ("conﬁguration") read as the letters they join, full-width letters as plain ones."""
    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    if keep_stopwords:
        return [stem(word.lower().replace("’", "'")) for word in _WORD.findall(text)]
    known = _CONTENT_WORDS.get
    return [
        term
        for word in _WORD.findall(text)
        if (term := known(word)) or (term is None and (term := _content_word(word)))
    ]


def _contracted(word: str) -> bool:
    """A contraction of a function word ("it's", "they're", "don't")."""
    base, _, rest = word.partition("'")
    return base in STOPWORDS or rest == "t" or base in _CONTRACTED
