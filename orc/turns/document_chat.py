"""``document_chat`` answering for MCP clients, admitted like a turn.

An MCP client that calls ``document_chat`` in ``answer`` mode makes a model call, as a turn does: the same policy
admits it (refused with the same 429 code, the refusal held a moment as the route's are), holds it at its caller's
fairness gate, and charges its tokens. The ``evidence`` mode makes no model call (the turn graph uses it inside an
admitted turn) and passes straight through.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager

from orc.admission.port import Admission, Gate
from orc.contracts import DocumentChatResult, FileRef
from orc.documents.chat.document_chat import DocumentChatMode, DocumentChatService
from orc.principal import Principal


class AdmittedDocumentChat:
    """:class:`DocumentChatService` behind admission (a ``turn``), for the MCP server's ``document_chat`` tool."""

    def __init__(self, service: DocumentChatService, admission: Admission) -> None:
        self._service = service
        self._admission = admission

    async def answer(
        self,
        principal: Principal,
        conversation_id: str,
        question: str,
        document_names: Sequence[str],
        cached_file_info: Sequence[FileRef] | None = None,
        mode: DocumentChatMode = "answer",
    ) -> DocumentChatResult:
        """:meth:`DocumentChatService.answer`, admitted and charged when it answers (``mode="answer"``)."""
        if mode != "answer":
            return await self._service.answer(
                principal, conversation_id, question, document_names, cached_file_info, mode
            )
        try:
            admitted = await self._admission.admit(principal, "turn")
        except Exception as refusal:
            # Held as /api/orc holds its early 429s: a client calling again as soon as it is refused would
            # otherwise keep the server parsing JSON-RPC requests it refuses, at the other callers' expense.
            await self._admission.hold_refusal(refusal)
            raise
        try:
            async with _at(admitted.gate):
                result = await self._service.answer(
                    principal, conversation_id, question, document_names, cached_file_info, mode
                )
            await admitted.charge(result.metadata.usage)
            return result
        finally:
            admitted.release()


def _at(gate: Gate | None) -> AbstractAsyncContextManager[None]:
    """Wait at the gate when it asks this caller to give way; otherwise go straight on."""
    return gate.step() if gate is not None and gate.yielding() else contextlib.nullcontext()
