"""Generated conversation titles: a real model names a conversation after its first answer, off the critical path.

The first turn is titled from its question at once (:func:`orc.conversations.titles.title_from_question`). With a
real model, a short title is then asked for in the background, after the answer has been stored and sent: the
turn never waits for it, a failure only keeps the first title, and a title the user chose is never replaced.
The offline model does not write titles (it would only repeat the question).

Titles are background work that competes with answers: a burst of new conversations would otherwise double the
model requests in flight (and the provider's request quota they draw on) just when answers are wanted. So only a
few title requests run at once and the rest wait their turn; past a bound, a title is not asked for at all and
the question's title stays.
"""

from __future__ import annotations

import asyncio
import logging
from xml.sax.saxutils import escape

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from orc.conversations.repository import ConversationRepository
from orc.conversations.titles import bounded, clean_title
from orc.models.metering import cache_read_tokens, message_usage
from orc.models.prompting import load_prompt
from orc.principal import Principal
from orc.telemetry import model_call, record_model_call

log = logging.getLogger(__name__)
EXCERPT_CHARS = 1_500
"""How much of the question and of the answer the title request carries."""
TITLE_TIMEOUT_SECONDS = 30.0
TITLE_CONCURRENCY = 2
"""Title requests under way at once."""
MAX_WAITING_TITLES = 1_000
"""Titles waiting for a turn; a conversation started beyond this keeps the title of its first question."""


class TitleWriter:
    """Writes generated titles in background tasks; :meth:`settle` waits for the ones under way."""

    def __init__(
        self,
        conversations: ConversationRepository,
        *,
        timeout_seconds: float = TITLE_TIMEOUT_SECONDS,
        concurrency: int = TITLE_CONCURRENCY,
        max_waiting: int = MAX_WAITING_TITLES,
    ) -> None:
        self._conversations = conversations
        self._timeout = timeout_seconds
        self._slots = asyncio.Semaphore(concurrency)
        self._max_tasks = concurrency + max_waiting
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    def schedule(
        self, model: BaseChatModel, principal: Principal, conversation_id: str, question: str, answer: str
    ) -> None:
        """Title the conversation from its first exchange, in the background (unless too many titles wait)."""
        if self._closing:
            return
        if len(self._tasks) >= self._max_tasks:
            log.debug("a conversation title was not asked for: %d titles are waiting", len(self._tasks))
            return
        task = asyncio.create_task(self._write(model, principal, conversation_id, question, answer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait until every title under way is written (or given up)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def aclose(self) -> None:
        """Shutdown: let the titles under way finish (each within its timeout) and give up those still waiting,
        whose conversations keep the title of their first question."""
        self._closing = True
        await self.settle()

    async def _write(
        self, model: BaseChatModel, principal: Principal, conversation_id: str, question: str, answer: str
    ) -> None:
        messages = [
            SystemMessage(load_prompt("conversation_title.system").render()),
            # Fenced and escaped: the question and the answer (which quotes documents) are data, and neither can
            # close its fence or pose as another part of the request.
            HumanMessage(
                f"<question>\n{escape(question[:EXCERPT_CHARS])}\n</question>\n\n"
                f"<answer>\n{escape(answer[:EXCERPT_CHARS])}\n</answer>"
            ),
        ]
        try:
            async with self._slots:
                if self._closing:
                    return
                with model_call("title"):
                    async with asyncio.timeout(self._timeout):
                        reply = await model.ainvoke(messages)
                    spent = message_usage(reply)
                    record_model_call(spent.input_tokens, spent.output_tokens, cache_read_tokens(reply))
                title = generated_title(reply.text)
                if title:
                    await self._conversations.set_generated_title(principal, conversation_id, title)
        except Exception as exc:  # the title from the question stays
            log.warning("a conversation title could not be generated: %s", type(exc).__name__)


def generated_title(text: str) -> str:
    """The model's reply as a title: its first line, without quotes, a trailing full stop or a "Title:" label."""
    line = next((line for line in text.strip().splitlines() if line.strip()), "")
    line = line.strip().removeprefix("Title:").removeprefix("title:").strip().strip("\"'“”‘’*#").strip()
    return bounded(clean_title(line.rstrip(".")))
