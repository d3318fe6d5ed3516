"""The offline model's context digests: deterministic, extractive, and valid by construction.

Task A (``TASK: PER_FILE_DIGEST``): the informative sentences of the spans become facts, each quoting its span
and citing it as ``<filename>::<span_id>``; the summary is the document's opening sentences (its titles, table
rows and questions left out, as answers leave them out). Task B
(``TASK: AGGREGATE_DIGEST``): the per-file digests are merged — identical claims become one fact citing the union
of their sources, every source copied from the input — under a summary that names each file. Nothing is
paraphrased or inferred, so every fact can be checked against the span it cites.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from orc.models.passages import Source, passages
from orc.models.prompting import unquoted_name

__all__ = ["aggregate_digest", "digest_reply", "per_file_digest"]

SCHEMA_VERSION = "context_digest.v1.4.1"
MAX_FACTS = 20
MAX_FACTS_PER_SPAN = 3
MAX_AGGREGATE_FACTS = 80
MAX_CLAIM_CHARS = 400
SUMMARY_SENTENCES = 3
SUMMARY_MIN_WORDS = 6
"""The summary opens with the document's first sentences of at least this many words (not its titles)."""
SUMMARY_CHARS = 600

_SPAN = re.compile(r"^\[(S\d+)\] ?(.*)$")
_DIGIT = re.compile(r"\d")
_MONEY = re.compile(r"[$€£¥%]|\b(?:euros?|dollars?|pounds?|usd|eur|gbp|percent|per cent)\b", re.IGNORECASE)
_DATE = re.compile(
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|days?|weeks?|months?|years?|\d{4}-\d{2}-\d{2})\b",
    re.IGNORECASE,
)
_OBLIGATION = re.compile(
    r"\b(?:must|shall|may|required|requires|prohibited|not allowed|allowed|permitted|entitled|obliged)\b",
    re.IGNORECASE,
)
_DEFINITION = re.compile(r"\b(?:means|is defined as|refers to)\b", re.IGNORECASE)
_RANK = {"high": 3, "medium": 2, "low": 1}


@dataclass(frozen=True, slots=True)
class _Span:
    span_id: str
    text: str


def digest_reply(messages: Sequence[BaseMessage]) -> str | None:
    """The digest JSON for a Task A or Task B request, or ``None`` when the messages ask for something else.

    A corrective retry repeats the same deterministic answer (it was valid the first time).
    """
    for message in messages:
        if not isinstance(message, HumanMessage):
            continue
        text = message.text
        if text.startswith("TASK: PER_FILE_DIGEST"):
            return json.dumps(per_file_digest(text), ensure_ascii=False)
        if text.startswith("TASK: AGGREGATE_DIGEST"):
            return json.dumps(aggregate_digest(text), ensure_ascii=False)
    return None


def per_file_digest(envelope: str) -> dict[str, Any]:
    """Task A from its envelope."""
    filename, fmt, spans = _parse_per_file(envelope)
    candidates: list[tuple[int, int, str, str]] = []  # (-score, order, span_id, sentence)
    opening: list[str] = []
    order = 0
    for span in spans:
        kept = 0
        for sentence in _sentences(filename, span):
            order += 1
            if len(opening) < SUMMARY_SENTENCES and len(sentence.split()) >= SUMMARY_MIN_WORDS:
                opening.append(sentence)
            score = _score(sentence)
            if score > 0 and kept < MAX_FACTS_PER_SPAN:
                candidates.append((-score, order, span.span_id, sentence))
                kept += 1
    chosen = sorted(sorted(candidates)[:MAX_FACTS], key=lambda item: item[1])
    facts = []
    for number, (_, _, span_id, sentence) in enumerate(chosen, start=1):
        claim, whole = _clip(sentence)
        facts.append(
            {
                "id": f"F{number}",
                "claim": claim,
                "kind": _kind(sentence),
                "reliability": "high" if whole else "medium",
                "sources": [f"{filename}::{span_id}"],
            }
        )
    summary = _clip(" ".join(opening), SUMMARY_CHARS)[0] if opening else "The file has no readable text."
    uncertainties: list[dict[str, Any]] = []
    if not facts:
        uncertainties.append({"issue": "No checkable statement was found in the text.", "sources": []})
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": "single",
        "document": {"filename": filename, "format": fmt},
        "summary": summary,
        "facts": facts,
        "uncertainties": uncertainties,
    }


def aggregate_digest(envelope: str) -> dict[str, Any]:
    """Task B from its envelope: merge identical claims, copy every source, summarize file by file."""
    files, digests = _parse_aggregate(envelope)
    merged: dict[str, dict[str, Any]] = {}
    uncertainties: list[dict[str, Any]] = []
    documents = []
    for digest in digests:
        document = digest.get("document") or {}
        documents.append(
            {
                "filename": document.get("filename"),
                "format": document.get("format"),
                "summary": digest.get("summary", ""),
            }
        )
        for fact in digest.get("facts") or []:
            if not isinstance(fact, dict) or not fact.get("sources"):
                continue
            key = " ".join(str(fact.get("claim", "")).lower().split()).rstrip(".")
            found = merged.get(key)
            if found is None:
                merged[key] = {
                    "claim": fact.get("claim", ""),
                    "kind": fact.get("kind", "statement"),
                    "reliability": fact.get("reliability", "medium"),
                    "sources": list(dict.fromkeys(fact["sources"])),
                }
                continue
            found["sources"] = list(dict.fromkeys([*found["sources"], *fact["sources"]]))
            if _RANK.get(str(fact.get("reliability")), 0) > _RANK.get(str(found["reliability"]), 0):
                found["reliability"] = fact["reliability"]
        for item in digest.get("uncertainties") or []:
            if isinstance(item, dict) and isinstance(item.get("sources", []), list):
                uncertainties.append({"issue": str(item.get("issue", "")), "sources": list(item.get("sources", []))})
    facts = [{"id": f"F{n}", **fact} for n, fact in enumerate(list(merged.values())[:MAX_AGGREGATE_FACTS], start=1)]
    parts = [f"{doc['filename']}: {doc['summary']}" for doc in documents if doc["summary"]]
    summary = " ".join(parts) if parts else "The session has no digested files."
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": "batch",
        "document": {"filename": "__BATCH__", "format": "mixed"},
        "batch": {"files": [{"filename": name, "format": fmt} for name, fmt in files]},
        "summary": _clip(summary, SUMMARY_CHARS * 2)[0],
        "facts": facts,
        "uncertainties": uncertainties,
        "documents": documents,
    }


def _parse_per_file(envelope: str) -> tuple[str, str, list[_Span]]:
    filename = fmt = ""
    spans: list[_Span] = []
    current: list[str] | None = None
    span_id = ""
    in_spans = False
    for line in envelope.split("\n"):
        if not in_spans:
            if line.startswith("FILE: "):
                filename = unquoted_name(line[len("FILE: ") :])
            elif line.startswith("FORMAT: "):
                fmt = line[len("FORMAT: ") :]
            elif line == "SOURCE_SPANS:":
                in_spans = True
            continue
        if line == "END_FILE":
            break
        match = _SPAN.match(line)
        if match:
            if current is not None:
                spans.append(_Span(span_id, "\n".join(current)))
            span_id, current = match.group(1), [match.group(2)]
        elif current is not None:
            current.append(line)
    if current is not None:
        spans.append(_Span(span_id, "\n".join(current)))
    return filename, fmt, spans


def _parse_aggregate(envelope: str) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
    files: list[tuple[str, str]] = []
    digests: list[dict[str, Any]] = []
    section = ""
    for line in envelope.split("\n"):
        if line in ("MANIFEST:", "FILE_DIGESTS:"):
            section = line
        elif line == "END_FILE_DIGESTS":
            break
        elif section == "MANIFEST:" and line.startswith("- filename: "):
            files.append((unquoted_name(line[len("- filename: ") :]), "text"))
        elif section == "MANIFEST:" and line.startswith("  format: ") and files:
            files[-1] = (files[-1][0], line[len("  format: ") :])
        elif section == "FILE_DIGESTS:" and line.strip():
            value = json.loads(line)
            if isinstance(value, dict):
                digests.append(value)
    return files, digests


def _sentences(filename: str, span: _Span) -> list[str]:
    """The whole sentences of a span, as an answer would quote them: no heading, title, table row, FAQ label or
    question (:func:`orc.models.passages.passages`)."""
    found = passages(Source(ref=f"{filename}::{span.span_id}", page=None, text=span.text))
    return [" ".join(passage.text.split()) for passage in found]


def _score(sentence: str) -> int:
    words = len(sentence.split())
    if words < 4 or (not sentence.rstrip().endswith((".", "!", "?", ";", ":")) and words < 8):
        return 0  # headings and fragments are not facts
    score = 1
    if _DIGIT.search(sentence):
        score += 2
    if _OBLIGATION.search(sentence) or _DEFINITION.search(sentence):
        score += 1
    return score


def _kind(sentence: str) -> str:
    if _DEFINITION.search(sentence):
        return "definition"
    if _DIGIT.search(sentence) and _MONEY.search(sentence):
        return "quantity"
    if _OBLIGATION.search(sentence):
        return "obligation"
    if _DATE.search(sentence):
        return "date"
    if _DIGIT.search(sentence):
        return "quantity"
    return "statement"


def _clip(text: str, limit: int = MAX_CLAIM_CHARS) -> tuple[str, bool]:
    """``text`` cut at a word boundary to ``limit`` characters (with an ellipsis), and whether it was whole."""
    if len(text) <= limit:
        return text, True
    cut = text[: limit - 1].rsplit(" ", 1)[0]
    return cut + "…", False
