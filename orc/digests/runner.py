"""Task A and Task B model calls: envelope in, validated digest out, one corrective retry, then a clear error.

A model answer that breaks the §5 invariants (not JSON, a missing key, a fact without sources, a SourceRef to a
span that was not given...) is sent back once with the list of broken rules; a second invalid answer ends as an
error with the reason, and nothing invalid is ever returned as a digest. The runner counts the calls and tokens
of each task (what the digest benchmark reports).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from orc.contracts import Usage
from orc.digests.envelopes import aggregate_envelope, per_file_envelope
from orc.digests.prompts import TaskPrompt, aggregate_prompt, per_file_prompt, retry_message
from orc.digests.schema import Digest, parse_json_object, validate_aggregate, validate_per_file
from orc.documents.records import DigestErrorCode
from orc.errors import OrcError
from orc.models.metering import cache_read_tokens, message_usage
from orc.telemetry import model_call, record_model_call

logger = logging.getLogger(__name__)

Task = Literal["per_file", "aggregate"]
MAX_ATTEMPTS = 2
"""The first answer and one retry with the broken rules."""


@dataclass(frozen=True, slots=True)
class DigestOutcome:
    """A validated digest, or the reason there is none; with the calls and tokens it took."""

    digest: Digest | None
    error: str | None
    prompt_version: str
    calls: int
    usage: Usage
    error_code: DigestErrorCode | None = None
    """``error`` as a stable code: ``model_failed`` or ``invalid_digest``."""


@dataclass(slots=True)
class TaskStats:
    """Calls and tokens spent on one task since the runner was made."""

    calls: int = 0
    usage: Usage = field(default_factory=Usage)


@dataclass(slots=True)
class DigestStats:
    """Model calls and tokens per task (Task A = ``per_file``, Task B = ``aggregate``)."""

    per_file: TaskStats = field(default_factory=TaskStats)
    aggregate: TaskStats = field(default_factory=TaskStats)


class DigestRunner:
    """Runs Task A and Task B on ``model``."""

    def __init__(self, model: BaseChatModel) -> None:
        self._model = model
        self.stats = DigestStats()

    @property
    def per_file_version(self) -> str:
        """The ``prompt_version`` of per-file digests (part of their cache key)."""
        return per_file_prompt().version

    @property
    def aggregate_version(self) -> str:
        """The ``prompt_version`` of aggregate digests."""
        return aggregate_prompt().version

    async def per_file(self, filename: str, fmt: str, spans: Sequence[tuple[str, str]]) -> DigestOutcome:
        """Task A: the digest of one file from its ``(span_id, text)`` spans."""
        span_ids = [span_id for span_id, _ in spans]

        def check(digest: Any) -> list[str]:
            return validate_per_file(digest, filename=filename, fmt=fmt, span_ids=span_ids)

        return await self._run("per_file", per_file_prompt(), per_file_envelope(filename, fmt, spans), check)

    async def aggregate(
        self, files: Sequence[tuple[str, str]], digests: Sequence[Mapping[str, Any]], allowed_refs: set[str]
    ) -> DigestOutcome:
        """Task B: the aggregate of per-file ``digests`` (never raw spans) for the manifest ``files``."""

        def check(digest: Any) -> list[str]:
            return validate_aggregate(digest, files=files, allowed_refs=allowed_refs)

        return await self._run("aggregate", aggregate_prompt(), aggregate_envelope(files, digests), check)

    async def _run(
        self, task: Task, prompt: TaskPrompt, envelope: str, check: Callable[[Any], list[str]]
    ) -> DigestOutcome:
        stats = self.stats.per_file if task == "per_file" else self.stats.aggregate
        messages: list[BaseMessage] = [SystemMessage(prompt.system), HumanMessage(envelope)]
        usage = Usage()
        calls = 0
        errors: list[str] = []
        for _ in range(MAX_ATTEMPTS):
            calls += 1
            stats.calls += 1
            try:
                with model_call(f"digest.{task}"):
                    reply = await self._model.ainvoke(messages)
                    spent = message_usage(reply)
                    record_model_call(spent.input_tokens, spent.output_tokens, cache_read_tokens(reply))
            except OrcError as exc:
                logger.warning("digest model call failed: %s", exc.code)
                return DigestOutcome(None, _model_failure(exc), prompt.version, calls, usage, "model_failed")
            except Exception as exc:
                logger.warning("digest model call failed: %s", type(exc).__name__)
                logger.debug("digest model failure details", exc_info=True)
                return DigestOutcome(
                    None, "the model request failed; retry later", prompt.version, calls, usage, "model_failed"
                )
            usage = usage + spent
            stats.usage = stats.usage + spent
            text = reply.text if isinstance(reply, AIMessage) else str(reply.content)
            digest, parse_error = parse_json_object(text)
            errors = [parse_error] if parse_error else check(digest)
            if not errors:
                return DigestOutcome(digest, None, prompt.version, calls, usage)
            messages = [*messages, AIMessage(text), HumanMessage(retry_message(errors))]
        reason = "the model's digest broke the digest rules twice: " + "; ".join(errors[:3])
        logger.info("digest rejected after %d attempts (%d broken rules)", calls, len(errors))
        return DigestOutcome(None, reason, prompt.version, calls, usage, "invalid_digest")


def _model_failure(exc: OrcError) -> str:
    if exc.status < 500 or exc.code in ("service_unavailable", "model_error"):
        return f"the model could not make the digest: {exc.message}"
    return "the model request failed; retry later"
