"""The one corrective retry of an answer whose sentences are mostly uncited (chat-system-reference: grounding).

Only for a real model (the offline model cites by construction) and only when the first answer is mostly
uncited: a well-grounded answer never waits for it. The retry is one more request with the first answer and an
instruction to cite; it is kept only when it cites more sentences, and a failed retry keeps the first answer.
"""

from __future__ import annotations

import logging

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable

from orc.contracts import Grounding
from orc.graph.context import TurnContext
from orc.graph.grounding import MarkerFilter, grounding_report
from orc.graph.progress import progress
from orc.graph.suggestions import FollowUpFilter
from orc.models.prompting import load_prompt
from orc.telemetry import model_call

log = logging.getLogger(__name__)


async def corrected_answer(
    model: Runnable[list[BaseMessage], BaseMessage],
    messages: list[BaseMessage],
    text: str,
    grounding: Grounding,
    ctx: TurnContext,
    markers: MarkerFilter,
) -> tuple[str, Grounding]:
    """The answer asked for once more with citations, or the first one when the retry is not better."""
    progress("answer", "Adding the citations the answer lacks", 95)
    request = [*messages, AIMessage(text), HumanMessage(load_prompt("answer.correction").render())]
    kept = grounding.model_copy(update={"corrective_retry": True})
    try:
        with model_call("answer.correction"):
            reply = await model.ainvoke(request)
            ctx.meter.record(reply)
    except Exception as exc:  # the first answer stands; the turn does not fail for an optional retry
        log.warning("the corrective answer request failed: %s", type(exc).__name__)
        return text, kept
    retry = MarkerFilter(markers.retrieved)
    fixed = (retry.feed(FollowUpFilter().strip(reply.text)) + retry.flush()).strip()
    report = grounding_report(fixed, markers.removed + retry.removed)
    if not fixed or report.cited_sentences <= grounding.cited_sentences:
        return text, kept
    return fixed, report.model_copy(update={"corrective_retry": True})
