"""What ``orc`` prints while a turn runs: progress to stderr (so it can be hidden), the answer to stdout.

Imported on its own by ``orc chat``, which shows its prompt before the heavy parts of orc are loaded.
"""

from __future__ import annotations

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
            print(
                f"  [tool] {event['name']} {event['status']} in {event['duration_ms']:.0f} ms",
                file=self.err,
                flush=True,
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
            print(
                f"  ({metadata['model']}; {metadata['model_calls']} model call(s); tool: {metadata['tool'] or 'none'};"
                f" cache: {metadata['cache'] or 'n/a'}; conversation {event['conversation_id']})",
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
