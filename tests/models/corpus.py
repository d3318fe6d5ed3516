"""The offline model's evaluation corpus (tests/models/data): documents split into spans, labelled questions."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from orc.contracts import SourceSpan
from orc.graph.answer_prompt import answer_system_prompt
from orc.text import rank

DATA = Path(__file__).parent / "data"
CITATION = re.compile(r"\[([^\[\]]+::S\d+)\]")


@dataclass(frozen=True)
class Labelled:
    question: str
    ref: str


@dataclass(frozen=True)
class QuestionSet:
    answerable: list[Labelled]
    unanswerable: list[str]


@cache
def spans() -> list[SourceSpan]:
    documents = json.loads((DATA / "documents.json").read_text(encoding="utf-8"))
    return [
        SourceSpan(ref=f"{name}::{span['id']}", document=name, span_id=span["id"], page=span["page"], text=span["text"])
        for name, document_spans in documents.items()
        for span in document_spans
    ]


def ranked_spans(question: str) -> list[SourceSpan]:
    """Every span of the corpus, best first for ``question`` (BM25), as retrieval hands an answer prompt its
    sources: the answerer trusts a sentence from a lower-ranked span less."""
    corpus = spans()
    order = [hit.index for hit in rank(question, [span.text for span in corpus])]
    return [corpus[index] for index in [*order, *(i for i in range(len(corpus)) if i not in set(order))]]


def question_set(filename: str) -> QuestionSet:
    data = json.loads((DATA / filename).read_text(encoding="utf-8"))
    return QuestionSet(
        answerable=[Labelled(item["question"], item["ref"]) for item in data["answerable"]],
        unanswerable=list(data["unanswerable"]),
    )


def answer_prompt(sources: list[SourceSpan]) -> str:
    """The real answer prompt, exactly as the graph's answer node renders it."""
    return answer_system_prompt("document", sources=sources)


def cited_refs(answer: str) -> list[str]:
    return CITATION.findall(answer)
