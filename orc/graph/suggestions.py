"""Follow-up suggestions: up to three questions the documents can answer, phrased as a person would ask them.

A real model writes its own at the end of its answer, in a ``<follow_ups>`` block the answer prompt asks for:
:class:`FollowUpFilter` keeps that block out of the streamed and stored answer and reads the questions from it, so
they cost no request of their own. An answer without the block (the offline model, a model that ignored the
instruction) gets suggestions made without a model, from the retrieved spans the answer did not use:

- a span under an FAQ-style heading that is a question asks that question ("How do I decompress a file?"), and a
  "How to …" heading asks it ("How to install" → "How do I install?");
- a span under a heading asks what the document says about it ("What does “Bug Reports” say about merge
  requests?"): a document is named by its title where its headings show one, else by its file name as a file
  ("What does bugs.md say about …?"), never by a file name made into a noun ("the bugs", "the TESTING");
- else a sentence is asked back from its subject and verb: "Are pets allowed?" from "Pets are allowed with …",
  "How much is the deposit?" from "The deposit is 2,900 euros", "How long does the warranty last?", else what the
  document says about the subject ("What does lease.txt say about the deposit?"); a sentence whose subject is not
  a plain noun phrase ("Technically there is …", "While merge requests are …") is asked about its last definite
  noun phrase ("the number of keys"), or not at all rather than with a question nobody would ask.

Text the user supplied to a context request is never asked about: they wrote it, and it has no name a question
could use ("What does supplied say about …?").

Deterministic and cheap, and grounded by construction: the span that suggested a question answers it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from orc.contracts import SECTION_SEPARATOR, Citation, SourceSpan
from orc.conversations.export import SUPPLIED
from orc.text import split_sentences
from orc.text.tokens import STOPWORDS

MAX_SUGGESTIONS = 3
MAX_SUGGESTION_CHARS = 120
MAX_TOPIC_WORDS = 3
MAX_SUBJECT_WORDS = 4
MAX_HEADING_TOPIC_WORDS = 5
MAX_TITLE_WORDS = 6

OPEN_TAG = "<follow_ups>"
CLOSE_TAG = "</follow_ups>"

_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ][A-Za-zÀ-ÖØ-öø-ÿ'-]*")
_TOKEN = re.compile(r"\S+")
_GENERIC = frozenset({"document", "documents", "section", "page", "following", "shall", "must", "will", "also"})
# Headings that name a part of a document, not a topic anyone asks about.
_GENERIC_HEADINGS = frozenset(
    "introduction overview contents summary appendix notes preface index abstract background general "
    "conclusion references glossary foreword acknowledgements acknowledgments".split()
)
# Words after which a sentence's subject has ended ("The monthly rent | is …", "New employees | get …").
_VERBS = frozenset(
    "is are was were be may must can cannot shall will would should could has have had does do did get gets "
    "need needs lasts last takes take requires require covers cover applies apply".split()
)
_BE = frozenset({"is", "are"})
# A sentence that opens with one of these starts with a clause, not its subject ("While merge requests are …").
_CONJUNCTIONS = frozenset(
    "while if when whenever although though because since unless until after before once as".split()
)
_HOW_TO = re.compile(r"^(how|what|where|when|which|why)\s+to\s+(.+)$", re.IGNORECASE)
_PRONOUNS = frozenset(
    "it they this that these those there here he she we you i either neither both all some any none one".split()
)
_PERMISSIONS = frozenset(
    "allowed permitted required needed forbidden prohibited included covered possible available mandatory "
    "optional refundable".split()
)
_MONEY = re.compile(r"[$€£¥]|\b(?:euros?|dollars?|pounds?|francs?|usd|eur|gbp|chf|cents?)\b", re.IGNORECASE)
_DURATION = re.compile(r"\b\d[\d,.]*\s*(?:days?|weeks?|months?|years?|hours?|minutes?)\b", re.IGNORECASE)
_HEADING_LABEL = re.compile(r"^(?:Q\s*[:.)]|Question\s*[:.)]|(?:\d{1,2}|[A-Z])(?:\.\d{1,2}){0,3}\.?)\s+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s*")


def follow_up_suggestions(
    question: str, sources: Sequence[SourceSpan], citations: Sequence[Citation], answer: str = ""
) -> list[str]:
    """Up to :data:`MAX_SUGGESTIONS` follow-up questions grounded in ``sources``: from the spans the answer did not
    cite first, then from the sentences of cited spans that the answer did not use."""
    asked = _words(question)
    answered = _words(answer)
    cited = {citation.ref for citation in citations}
    sources = [source for source in sources if source.document != SUPPLIED]
    ordered = [source for source in sources if source.ref not in cited] + [s for s in sources if s.ref in cited]
    titles = document_titles(sources)
    per_span = [_candidates(source, asked, answered, titles) for source in ordered]
    suggestions: list[str] = []
    seen = {_key(question)}
    # The best question of each span first (spread over the sources), then the next best of each, and so on.
    for depth in range(max((len(found) for found in per_span), default=0)):
        for found in per_span:
            if depth >= len(found) or _key(found[depth]) in seen:
                continue
            seen.add(_key(found[depth]))
            suggestions.append(found[depth])
            if len(suggestions) == MAX_SUGGESTIONS:
                return suggestions
    return suggestions


def _candidates(source: SourceSpan, asked: set[str], answered: set[str], titles: dict[str, str]) -> list[str]:
    """The span's questions, best first: a heading's own question, a specific question about a sentence ("Are pets
    allowed?"), what the document says about the heading's topic, then what it says about a sentence's subject or
    object; each once."""
    found: list[tuple[int, int, str]] = []
    heading = _from_heading(source, asked, titles)
    if heading is not None:
        found.append((2 if heading.startswith("What does ") else 0, 0, heading))
    for order, sentence in enumerate(split_sentences(source.text), start=1):
        words = _words(sentence)
        if words and len(words & answered) >= len(words) / 2:
            continue  # the answer already says this
        phrased = _from_sentence(sentence, asked)
        if isinstance(phrased, _Topic):
            found.append((3, order, f"What does {_document_ref(source.document, titles)} say about {phrased.text}?"))
        elif phrased is not None:
            found.append((1, order, phrased))
    unique: dict[str, str] = {}
    for _, _, text in sorted(found):
        if len(text) <= MAX_SUGGESTION_CHARS:
            unique.setdefault(_key(text), _finished(text))
    return list(unique.values())


# -- from a heading ------------------------------------------------------------------------------------------------


def _from_heading(source: SourceSpan, asked: set[str], titles: dict[str, str]) -> str | None:
    """The question a heading is ("Q: How do I …?", "How to install" → "How do I install?"), or what the document
    says about the topic it names."""
    if not source.section:
        return None
    title = _HEADING_LABEL.sub("", source.section.split(SECTION_SEPARATOR)[-1].strip()).strip(" :.")
    words = _WORD.findall(title)
    if not words or not _new_content(words, asked):
        return None
    if title.endswith("?"):
        return title
    if len(words) > MAX_HEADING_TOPIC_WORDS or not title.replace("-", " ").replace("'", "").replace(" ", "").isalpha():
        return None
    how_to = _HOW_TO.match(title)
    if how_to:
        asker = "do I" if how_to.group(1).lower() == "how" else "should I"
        return f"{how_to.group(1).capitalize()} {asker} {_topic_case(_WORD.findall(how_to.group(2)))}?"
    topic = _topic_case(words)
    own_title = titles.get(source.document, PurePosixPath(source.document).stem)
    if topic.lower() in _GENERIC_HEADINGS or topic.lower() in own_title.lower():
        return None  # "Introduction", or the document's own title
    return f"What does {_document_ref(source.document, titles)} say about {topic}?"


def _topic_case(words: Sequence[str]) -> str:
    """Words as they read inside a sentence: "Payment Terms" → "payment terms"; acronyms and names written with
    inner capitals ("GitLab") kept."""
    return " ".join("-".join(map(_part_case, word.split("-"))) for word in words)


def _part_case(word: str) -> str:
    return word if len(word) > 1 and word[1:] != word[1:].lower() else word.lower()


def document_titles(sources: Sequence[SourceSpan]) -> dict[str, str]:
    """Each document's title, where its spans show one: the head of a section path that has a heading under it
    (a path of one heading may be any top-level heading, so it names no title)."""
    titles: dict[str, str] = {}
    for source in sources:
        path = [part.strip() for part in (source.section or "").split(SECTION_SEPARATOR) if part.strip()]
        if len(path) > 1 and source.document not in titles:
            title = _HEADING_LABEL.sub("", path[0]).strip(" :.")
            words = _WORD.findall(title)
            if words and len(words) <= MAX_TITLE_WORDS and title.lower() not in _GENERIC_HEADINGS:
                titles[source.document] = title.title() if title.isupper() else title
    return titles


def _document_ref(document: str, titles: dict[str, str]) -> str:
    """How a question names a document: its title in quotes (“Bug Reports”), else its file name as a file
    (``bugs.md``): a file name is no noun phrase ("the bugs", "the TESTING")."""
    title = titles.get(document)
    return f"“{title}”" if title else document


# -- from a sentence -----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Topic:
    """A noun phrase a sentence is about, asked as what its document says about it."""

    text: str


def _from_sentence(sentence: str, asked: set[str]) -> str | _Topic | None:
    """The question a person would ask for ``sentence``, else the topic to ask its document about, or ``None`` when
    it offers nothing the question did not."""
    words = _WORD.findall(sentence)
    verb = next((index for index, word in enumerate(words[: MAX_SUBJECT_WORDS + 1]) if word.lower() in _VERBS), None)
    if (
        verb
        and words[0].lower() not in _CONJUNCTIONS
        and _plain_noun_phrase(words[:verb])
        and _new_content(words[:verb], asked)
    ):
        subject = _cased(words[:verb])
        said, rest = words[verb].lower(), _after(sentence, words[verb])
        following = _WORD.findall(rest)[:1]
        if said in _BE and following and following[0].lower() in _PERMISSIONS:
            return f"{said.capitalize()} {subject} {following[0].lower()}?"
        if said in ("lasts", "last"):
            return f"How long {'does' if said == 'lasts' else 'do'} {subject} last?"
        if said in _BE and _MONEY.search(rest):
            return f"How much {said} {subject}?"
        if said in _BE and _DURATION.search(rest):
            return f"How long {said} {subject}?"
        if words[0].lower() not in ("a", "an"):
            return _Topic(subject)  # not "a goal": what the document says about something it names
    phrase = _noun_phrase(words, asked)
    return _Topic(phrase) if phrase is not None else None


def _after(sentence: str, verb: str) -> str:
    """The sentence after the first occurrence of the word ``verb``."""
    match = re.search(rf"\b{re.escape(verb)}\b", sentence)
    return sentence[match.end() :] if match else ""


def _plain_noun_phrase(words: Sequence[str]) -> bool:
    """Whether ``words`` read as a noun phrase: no pronoun, adverb or verb form ("Technically there" is none)."""
    return bool(words) and all(
        word.lower() not in _PRONOUNS and not word.lower().endswith(("ly", "ing")) for word in words
    )


def _noun_phrase(words: Sequence[str], asked: set[str]) -> str | None:
    """ "the landlord's written consent": a determiner and the content words after it, the last such phrase (a
    sentence ends on its object: "The tenant rents the flat" asks about the flat)."""
    for index in reversed(range(len(words))):
        word = words[index]
        # Only "the …": "a GitLab login" or "every branch" names nothing the document could say more about.
        if word.lower() != "the":
            continue
        run: list[str] = []
        for following in words[index + 1 : index + 1 + MAX_TOPIC_WORDS]:
            lowered = following.lower()
            # "the number of keys": "of" and the noun after it belong to the phrase ("the number" alone says nothing).
            if lowered == "of" and run and run[-1] != "of":
                run.append(following)
                continue
            if lowered in STOPWORDS or lowered in _VERBS:
                break
            run.append(following)
        if run and run[-1].lower() == "of":
            continue  # cut short: "the current version" of what?
        if run and _plain_noun_phrase(run) and _new_content(run, asked):
            return _cased([word.lower(), *run])
    return None


def _new_content(words: Sequence[str], asked: set[str]) -> bool:
    content = [w.lower() for w in words if len(w) > 3 and w.lower() not in STOPWORDS and w.lower() not in _GENERIC]
    return bool(content) and not any(word in asked for word in content)


def _cased(words: Sequence[str]) -> str:
    return _topic_case(words)


def _words(text: str) -> set[str]:
    return {word.lower() for word in _WORD.findall(text) if len(word) > 3 and word.lower() not in STOPWORDS}


def _key(text: str) -> str:
    return " ".join(word.lower() for word in _WORD.findall(text))


def _finished(text: str) -> str:
    text = " ".join(text.split())
    return text[:1].upper() + text[1:]


# -- written by the model --------------------------------------------------------------------------------------------


class FollowUpFilter:
    """Keeps a model's ``<follow_ups>`` block out of its answer and reads the questions from it.

    :meth:`feed` takes the answer as it streams and returns what may be shown now: the text before the block (a
    possible start of the tag is held back until the next piece says whether it is one); nothing after the block
    opens. :meth:`flush` returns what was held back at the end; :attr:`suggestions` the questions the block held.
    """

    def __init__(self) -> None:
        self._held = ""
        self._block: str | None = None

    def feed(self, text: str) -> str:
        """The part of ``text`` (after what was held back) that belongs to the answer."""
        if self._block is not None:
            self._block += text
            return ""
        pending = self._held + text
        at = pending.find(OPEN_TAG)
        if at >= 0:
            self._held = ""
            self._block = pending[at + len(OPEN_TAG) :]
            return pending[:at]
        longest = min(len(OPEN_TAG) - 1, len(pending))
        keep = next((n for n in range(longest, 0, -1) if OPEN_TAG.startswith(pending[-n:])), 0)
        self._held = pending[len(pending) - keep :] if keep else ""
        return pending[: len(pending) - keep]

    def flush(self) -> str:
        """What was held back as a possible tag start, at the end of the answer."""
        held, self._held = self._held, ""
        return held

    def strip(self, text: str) -> str:
        """``text`` whole, without its block (for an answer that did not stream)."""
        return self.feed(text) + self.flush()

    @property
    def suggestions(self) -> list[str]:
        """The questions of the block, at most :data:`MAX_SUGGESTIONS` (none when the model wrote no block)."""
        if self._block is None:
            return []
        body = self._block.split(CLOSE_TAG, 1)[0]
        found: list[str] = []
        for line in body.splitlines():
            question = _BULLET.sub("", line).strip().strip('"“”')
            if question and len(question) <= MAX_SUGGESTION_CHARS and _key(question) not in map(_key, found):
                found.append(question)
        return found[:MAX_SUGGESTIONS]
