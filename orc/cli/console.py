"""What ``orc`` prints while a turn runs: progress to stderr (so it can be hidden), the answer to stdout.

Imported on its own by ``orc chat``, which shows its prompt before the heavy parts of orc are loaded.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, TextIO

from orc.cli.answer_text import AnswerText, place_line

if TYPE_CHECKING:
    from orc.turns import Event


NOTHING_YET: dict[tuple[str, str | None], str] = {
    ("sessions", "list"): "No conversations yet. Start one with: orc chat  (or: orc ask QUESTION --file PATH)",
    ("docs", "list"): "No documents yet; add some with: orc docs add PATH... [--context TYPE:ID | --session ID]",
    ("contexts", "list"): "No contexts yet; create one with: orc contexts put folder ID",
}
"""What a read-only command says on a fresh ORC_HOME, which it answers without opening (or creating) anything."""


TOOL_WORDS = {
    "document_chat": "Reading the attached files",
    "list": "Listing the documents",
    "analyze": "Summarizing a document",
    "get_content": "Reading a document",
    "get_summary": "Reading a document's summary",
    "search": "Searching the documents",
    "get_page": "Reading a page",
    "get_span": "Reading a passage",
    "attach_document": "Attaching a document",
    "list_documents": "Listing this chat's files",
    "remove_document": "Removing a document",
}
"""What each document tool does, in a reader's words, as the page says it (orc/web/js/chat.js)."""


def tool_words(name: str) -> str:
    """``document_chat`` or ``documents.search`` (any spelling) as the step a reader follows."""
    if name in ("contexts.list", "contexts_list"):
        return "Looking at your folders"
    return TOOL_WORDS.get(re.sub(r"^(documents|session)(\.|__?)", "", name), name)


class Console:
    """Writes progress to stderr (so it can be hidden) and answers to stdout."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, model: str = "offline") -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.model = model
        self._answering = False
        self._answer = AnswerText()

    def event(self, event: Event) -> None:
        """Render one stream event as it happens."""
        if event["type"] == "progress":
            # Once the answer streams, a progress line would land in the middle of it on a terminal.
            if not self._answering:
                print(f"  [{event['percent']:>3}%] {event['message']}", file=self.err, flush=True)
        elif event["type"] == "tool" and event["status"] != "running":
            outcome = "done" if event["status"] == "ok" else "failed"
            print(
                f"  {tool_words(event['name'])}: {outcome} in {event['duration_ms']:.0f} ms", file=self.err, flush=True
            )
        elif event["type"] == "token":
            self._answering = True
            print(self._answer.feed(event["text"]), end="", file=self.out, flush=True)
        elif event["type"] == "final":
            self._answering = False
            print(self._answer.flush(), file=self.out)
            for line in self._answer.sources(event["citations"]):
                print(line, file=self.out)
            if event["places_to_look"]:
                # A decline still says where to read: the passages that came closest (not sources it relied on).
                print("Places to look:", file=self.out)
                for place in event["places_to_look"]:
                    print(place_line(place), file=self.out)
            self._answer = AnswerText()
            metadata = event["metadata"]
            calls = metadata["model_calls"]
            print(
                f"  ({metadata['model']}; {calls} model call{'' if calls == 1 else 's'};"
                f" conversation {event['conversation_id']})",
                file=self.err,
            )
        elif event["type"] == "context_resolved":
            print(f"  [context] {event['outcome'].replace('_', ' ')}", file=self.err, flush=True)
        elif event["type"] == "error":
            self._answering = False
            print(f"\nerror ({event['code']}): {event['message']}", file=self.err)
            if event["code"] in ("internal_error", "service_unavailable", "model_error") and self.model != "offline":
                # A model endpoint that cannot be reached is the commonest cause, and the error alone hides it.
                print(
                    f"hint: check that the model endpoint of ORC_MODEL={self.model} is reachable and its"
                    " credentials are set (ORC_MODEL_BASE_URL, OPENAI_API_KEY or AZURE_OPENAI_*); the log line"
                    " 'turn failed: <error type>' names the failure",
                    file=self.err,
                )
