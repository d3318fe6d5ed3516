"""What the model was sent: the sources of each answer request, recorded as the model receives them.

Source recall tells a miss that retrieval caused (the passage holding the answer never reached the model) from
one the model caused (it had the passage and did not use it). It is measured on the request itself, not on what
the pipeline meant to send: :class:`AnswerRequests` is a LangChain callback handler set on the chat model, so it
sees the messages of every request any model (the offline one included) receives, after every budget and filter.
An answer request is one whose system message carries a ``<sources>`` block; its sources are read back with the
same parser the offline model uses (:func:`orc.models.answering.find_sources`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage, SystemMessage

from orc.models.answering import Source, find_sources
from orc.models.tokens import EstimatedTokens, TokenCounter


@dataclass(frozen=True, slots=True)
class SentSources:
    """The sources of one answer request, and what they cost in tokens (the ``ORC_SOURCES_TOKENS`` measure)."""

    sources: tuple[Source, ...]
    tokens: int

    def holds(self, document: str, phrase: str, normal: Callable[[str], str]) -> bool:
        """Whether a source of ``document`` holds ``phrase`` (both compared through ``normal``)."""
        wanted = normal(phrase)
        return any(_document(source.ref) == document and wanted in normal(source.text) for source in self.sources)


def _document(ref: str) -> str:
    return ref.rpartition("::")[0]


class AnswerRequests(BaseCallbackHandler):
    """Records the sources of every answer request a chat model receives; :meth:`take` hands them over.

    Set it on the model (``model.callbacks = [recorder]``): the handler runs inline, in the task that makes the
    request, so the requests of a turn are recorded by the time the turn returns.
    """

    run_inline = True

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self._counter = counter or EstimatedTokens()
        self._requests: list[SentSources] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the sources of each answer request in ``messages`` (other requests are not answer requests)."""
        for request in messages:
            system = "\n".join(message.text for message in request if isinstance(message, SystemMessage))
            sources = find_sources(system)
            if sources is not None:
                self._requests.append(
                    SentSources(tuple(sources), sum(self._counter.count(source.text) for source in sources))
                )

    def take(self) -> list[SentSources]:
        """The answer requests recorded since the last call, oldest first."""
        taken, self._requests = self._requests, []
        return taken


def first_answer_request(requests: Sequence[SentSources]) -> SentSources | None:
    """The turn's answer request (a corrective retry repeats its sources), or None when it made none."""
    return requests[0] if requests else None
