"""Exports as a costly operation: admitted and counted per principal, PDFs bounded in size and rendered outside
the serving process, so one principal exporting long conversations in a loop does not slow everyone else.

Laying out a PDF costs CPU in proportion to the conversation's characters: little for a short chat, seconds
for hundreds of long answers. So a PDF is refused above :data:`MAX_PDF_CHARS` (Markdown and JSON, which cost
next to nothing, are not), and it is rendered by a :class:`Renderer` — the extraction pool's workers, at a lower
priority, in the exporting organization's turn and under the pool's deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from orc.admission import UNLIMITED, Admission
from orc.conversations.context_requests import ContextRequestRecord
from orc.conversations.export import ExportFormat, export
from orc.conversations.models import Conversation, Feedback
from orc.errors import OrcError, PayloadTooLarge, ServiceUnavailable
from orc.output_policy import OutputPolicy
from orc.principal import Principal

__all__ = ["MAX_PDF_CHARS", "Exports", "Renderer"]

MAX_PDF_CHARS = 250_000
"""The longest conversation (questions, answers and quotes, in characters) exported as a PDF, so one export holds a
worker only briefly. A longer one is refused (413 ``export_too_large``) with a pointer to Markdown or JSON."""

_T = TypeVar("_T")


class Renderer(Protocol):
    """Runs a CPU-bound, picklable function away from the event loop, in ``organization``'s turn (implemented by
    :class:`orc.documents.parsing.extraction_pool.ExtractionPool`)."""

    async def run(
        self, function: Callable[..., _T], *args: Any, organization: str, overdue: OrcError, over_memory: OrcError
    ) -> _T: ...


def pdf_chars(conversation: Conversation) -> int:
    """The characters a PDF of ``conversation`` lays out (what its rendering time grows with)."""
    return sum(
        len(turn.user.content)
        + len(turn.assistant.content)
        + sum(len(citation.quote) for citation in turn.assistant.citations)
        for turn in conversation.turns
    )


class Exports:
    """Renders a conversation in a format, once the export is admitted."""

    def __init__(
        self, renderer: Renderer, admission: Admission = UNLIMITED, *, max_pdf_chars: int = MAX_PDF_CHARS
    ) -> None:
        self._renderer = renderer
        self._admission = admission  # an export is admitted (counted, one at a time) before it renders
        self._max_pdf_chars = max_pdf_chars

    async def render(
        self,
        principal: Principal,
        conversation: Conversation,
        feedback: Mapping[str, Feedback],
        fmt: ExportFormat,
        *,
        requests: Sequence[ContextRequestRecord] = (),
        policy: OutputPolicy | None = None,
    ) -> bytes:
        """``conversation`` as ``fmt`` with its context ``requests`` where they happened, every string through the
        output ``policy``; 429 (``export_limit``) over the principal's window, 413 (``export_too_large``) for a PDF
        over :data:`MAX_PDF_CHARS`, 503 when rendering outlasts the deadline."""
        if fmt == "pdf" and (chars := pdf_chars(conversation)) > self._max_pdf_chars:
            raise PayloadTooLarge(
                f"this conversation is too long to export as a PDF ({chars:,} characters, at most "
                f"{self._max_pdf_chars:,}); export it as markdown or json",
                code="export_too_large",
            )
        async with await self._admission.admit(principal, "export"):
            if fmt != "pdf":
                return await asyncio.to_thread(export, conversation, dict(feedback), fmt, list(requests), policy)
            failed = ServiceUnavailable(
                "the PDF could not be rendered in time; retry, or export as markdown", code="export_unavailable"
            )
            return await self._renderer.run(
                export,
                conversation,
                dict(feedback),
                fmt,
                list(requests),
                policy,
                organization=principal.organization,
                overdue=failed,
                over_memory=failed,
            )
