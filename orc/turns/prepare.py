"""Preparing a turn: the question's checks and the turn's limits, before anything runs, streams or is stored.

The limits are built once, by the composition root, from ``Settings``; a request is checked against them here and
becomes a :class:`PreparedTurn` (or a :class:`orc.errors.CallerError`). A paused turn resumes as the turn it was,
rebuilt from its stored request.
"""

from __future__ import annotations

import unicodedata
import uuid
from dataclasses import dataclass, field
from typing import Literal

from orc.clock import utc_now
from orc.contracts import UnavailableDocument
from orc.conversations import FocusContext
from orc.conversations.context_requests import ContextRequestRecord
from orc.documents.catalog.attachments import unavailable_attachments
from orc.documents.catalog.scopes import DocumentScopes
from orc.documents.sessions import SessionFiles
from orc.errors import InvalidInput, OrcError, PayloadTooLarge
from orc.models.choice import ChosenModel, ModelChoice
from orc.names import normalize_blob_names, validate_identifier
from orc.principal import Principal
from orc.turns.contract import TurnRequest


@dataclass(frozen=True, slots=True)
class TurnLimits:
    """Bounds on a turn's input and work, from settings (each field is the ``ORC_`` setting of its name)."""

    max_question_chars: int
    max_blob_names: int
    max_tool_rounds: int
    history_tokens: int
    """Token budget of the history in the answer request (``ORC_HISTORY_TOKENS``)."""
    sources_tokens: int
    """Token budget of the sources in the answer prompt (``ORC_SOURCES_TOKENS``)."""
    turn_timeout_seconds: float
    """How long a whole turn may take (``ORC_TURN_TIMEOUT``)."""


@dataclass(frozen=True, slots=True)
class PreparedTurn:
    """A validated turn, ready to run."""

    principal: Principal
    conversation_id: str
    question: str
    blob_names: list[str]
    focus_context: FocusContext | None
    model: ChosenModel
    unavailable: list[UnavailableDocument] = field(default_factory=list)
    """Attached files the answer cannot use (failed, or still uploading): left out of the tools, named in it."""
    allow_pause: bool = False
    """The caller can show a context request: a turn that lacks context pauses instead of answering."""
    model_alias: str | None = None
    asked_at: str = field(default_factory=utc_now)
    """When the question came in: the user message's time (the answer's is when it was written)."""

    @property
    def usable_names(self) -> list[str]:
        """The attached files the turn's tools read."""
        left_out = {document.name for document in self.unavailable}
        return [name for name in self.blob_names if name not in left_out]


class TurnPreparer:
    """Checks requests against the limits and the caller's files, contexts and allowed models."""

    def __init__(
        self,
        *,
        limits: TurnLimits,
        models: ModelChoice,
        files: SessionFiles,
        scopes: DocumentScopes,
        default_mode: Literal["allow", "never"],
    ) -> None:
        self._limits = limits
        self._models = models
        self._files = files
        # Focus validation uses the same scopes as the tools.
        self._scopes = scopes
        self._default_mode = default_mode
        """The server's context-request mode, for requests that do not say (``ORC_CONTEXT_REQUESTS``)."""

    async def prepare(self, request: TurnRequest, principal: Principal) -> PreparedTurn:
        """Validate the request; raises a :class:`orc.errors.CallerError` before anything is stored or streamed."""
        question = checked_question(request.question)
        if len(question) > self._limits.max_question_chars:
            raise PayloadTooLarge(
                f"the question is longer than {self._limits.max_question_chars} characters",
                code="question_too_long",
            )
        conversation_id = request.conversation_id or str(uuid.uuid4())
        validate_identifier(conversation_id, what="conversation")
        if len(request.blob_names) > self._limits.max_blob_names:
            raise InvalidInput(f"at most {self._limits.max_blob_names} blob_names per turn", code="too_many_blob_names")
        blob_names = normalize_blob_names(request.blob_names)
        records = await self._files.require_names(principal, conversation_id, blob_names)
        if request.context is not None:
            await self._scopes.check_focus(principal, request.context)
        model = self._models.pick(request.model)
        return PreparedTurn(
            principal,
            conversation_id,
            question,
            blob_names,
            request.context,
            model,
            unavailable_attachments(records),
            allow_pause=(request.context_requests or self._default_mode) == "allow",
            model_alias=request.model,
        )

    def resumed(self, record: ContextRequestRecord) -> PreparedTurn:
        """The turn a context request paused, as it was asked (it may not pause again)."""
        try:
            model = self._models.pick(record.model)
        except OrcError:
            model = self._models.pick(None)  # the alias left the allow-list while the turn waited
        return PreparedTurn(
            record.principal,
            record.conversation_id,
            record.question,
            record.blob_names,
            record.focus_context,
            model,
            list(record.unavailable),
            allow_pause=False,
            model_alias=record.model,
        )


_INVISIBLE = {"Cf", "Zl", "Zp"}
_ALLOWED_CONTROLS = {"\n", "\t", "\r"}


def checked_question(text: str) -> str:
    """The question, stripped; refused before anything runs when it has nothing visible (``empty_question``) or
    characters no text should hold: lone surrogates, NUL and other control characters (``invalid_question``)."""
    question = text.strip()
    for char in question:
        category = unicodedata.category(char)
        if category == "Cs" or (category == "Cc" and char not in _ALLOWED_CONTROLS):
            raise InvalidInput(
                "the question contains characters that are not text (a lone surrogate or a control character)",
                code="invalid_question",
            )
    if not any(unicodedata.category(char) not in _INVISIBLE and not char.isspace() for char in question):
        raise InvalidInput("the question is empty", code="empty_question")
    return question
