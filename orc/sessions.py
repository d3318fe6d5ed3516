"""The caller's conversations as the API, the CLI and the page see them: list, get, rename, rate and export.

Built without a model or a graph (the foundation of :mod:`orc.composition`), so a command that only lists
conversations does not load the turn machinery; deleting a conversation also deletes its graph checkpoints, so it
stays with the turn service.
"""

from __future__ import annotations

import asyncio

from orc.conversations.context_requests import ContextRequests
from orc.conversations.export import ExportFormat, filename
from orc.conversations.exporting import Exports
from orc.conversations.models import Conversation, ConversationSummary, Feedback
from orc.conversations.repository import ConversationRepository
from orc.conversations.titles import MAX_USER_TITLE_CHARS, clean_title
from orc.documents.sessions import SessionFiles, SessionHeader
from orc.errors import InvalidInput, NotFound, PayloadTooLarge
from orc.names import validate_identifier
from orc.output_policy import OutputPolicy
from orc.principal import Principal

LISTED_SESSIONS = 100
"""How many sessions the list holds: the most recently updated."""


class Sessions:
    """A principal's conversations: those with turns, and those with files but no turn yet."""

    def __init__(
        self,
        conversations: ConversationRepository,
        files: SessionFiles,
        requests: ContextRequests,
        exports: Exports,
        output_policy: OutputPolicy,
    ) -> None:
        self._conversations = conversations
        self._files = files
        self._requests = requests
        self._exports = exports
        self._output_policy = output_policy

    async def summaries(self, principal: Principal, *, limit: int = LISTED_SESSIONS) -> list[ConversationSummary]:
        """The principal's ``limit`` most recently updated sessions, most recent first: conversations with turns,
        and sessions with files but no turn yet (a client that uploads first must find its session in the list).

        Only the newest session headers are read (twice ``limit``), unless they do not reach back past the listed
        conversations: a user's thousand sessions with files cost the list what a hundred do.
        """
        batch = 2 * limit
        summaries, headers = await asyncio.gather(
            self._conversations.list(principal, limit=limit), self._files.sessions(principal, limit=batch)
        )
        # When the conversations were cut, a session older than the last of them cannot make the list.
        cutoff = summaries[-1].updated_at if summaries and len(summaries) == limit else ""
        file_only = await self._without_turns(principal, headers, summaries, cutoff, limit)
        if len(headers) == batch and len(file_only) < limit and headers[-1].updated_at > cutoff:
            file_only = await self._without_turns(
                principal, await self._files.sessions(principal), summaries, cutoff, limit
            )
        if not file_only:
            return summaries
        listed = sorted([*summaries, *file_only], key=lambda summary: summary.updated_at, reverse=True)
        return listed[:limit]

    async def _without_turns(
        self,
        principal: Principal,
        headers: list[SessionHeader],
        summaries: list[ConversationSummary],
        cutoff: str,
        limit: int,
    ) -> list[ConversationSummary]:
        """The sessions of ``headers`` that have files and no conversation, newer than ``cutoff``, as summaries."""
        known = {summary.conversation_id for summary in summaries}
        candidates = [
            header
            for header in headers
            if header.conversation_id not in known and header.files and header.updated_at > cutoff
        ]
        without: list[SessionHeader] = []
        # The conversations were cut (``cutoff``): a session with files missing from them may be an older
        # conversation with turns, not one without. Only those without a conversation are listed from their files,
        # checked newest first, a list's worth at a time, until the list is full.
        for start in range(0, len(candidates), limit):
            chunk = candidates[start : start + limit]
            if cutoff:
                found = await asyncio.gather(
                    *(self._conversations.get(principal, header.conversation_id) for header in chunk)
                )
                chunk = [header for header, summary in zip(chunk, found, strict=True) if summary is None]
            without += chunk
            if len(without) >= limit:
                break
        return [_files_only(header) for header in without[:limit]]

    async def titles(self, principal: Principal, headers: list[SessionHeader]) -> dict[str, str]:
        """The title the list shows for each session of ``headers`` (its conversation's, else its first files')."""
        found = await asyncio.gather(*(self._conversations.get(principal, h.conversation_id) for h in headers))
        return {
            header.conversation_id: (summary or _files_only(header)).title
            for header, summary in zip(headers, found, strict=True)
        }

    async def get(self, principal: Principal, conversation_id: str) -> Conversation:
        """A conversation with its full history and the feedback on its answers; :class:`NotFound` for unknown or
        other principals' ids. A session with files and no turn yet is the empty conversation the list shows."""
        validate_identifier(conversation_id, what="conversation")
        summary = await self._conversations.get(principal, conversation_id)
        if summary is None:
            header = await self._files.header(principal, conversation_id)
            if header is None or not header.files:
                raise NotFound("no such session", code="session_not_found")
            return Conversation(summary=_files_only(header), turns=[])
        turns, feedback = await asyncio.gather(
            self._conversations.turns(principal, conversation_id),
            self._conversations.feedback(principal, conversation_id),
        )
        if feedback:
            turns = [
                turn.model_copy(
                    update={
                        "assistant": turn.assistant.model_copy(update={"feedback": feedback[turn.assistant.message_id]})
                    }
                )
                if turn.assistant.message_id in feedback
                else turn
                for turn in turns
            ]
        return Conversation(summary=summary, turns=turns)

    async def rename(self, principal: Principal, conversation_id: str, title: str) -> ConversationSummary:
        """Give a conversation the title the user chose (never replaced by a generated one)."""
        validate_identifier(conversation_id, what="conversation")
        cleaned = clean_title(title)
        if not cleaned:
            raise InvalidInput("the title is empty", code="empty_title")
        if len(cleaned) > MAX_USER_TITLE_CHARS:
            raise PayloadTooLarge(f"the title is longer than {MAX_USER_TITLE_CHARS} characters", code="title_too_long")
        summary = await self._conversations.rename(principal, conversation_id, cleaned)
        if summary is None and await self._files.files(principal, conversation_id):
            # A session with files and no turn yet is a session the user sees (and may name).
            summary = await self._conversations.rename(principal, conversation_id, cleaned, start=True)
        if summary is None:
            raise NotFound("no such session", code="session_not_found")
        return summary

    async def give_feedback(
        self, principal: Principal, conversation_id: str, message_id: str, feedback: Feedback
    ) -> Feedback:
        """Rate an answer (``up``/``down``, optional comment); a second rating of the same answer replaces the
        first. :class:`NotFound` when the conversation has no such answer."""
        validate_identifier(conversation_id, what="conversation")
        stored = await self._conversations.set_feedback(principal, conversation_id, message_id, feedback)
        if stored is None:
            raise NotFound("no such answer in this session", code="message_not_found")
        return stored

    async def export(self, principal: Principal, conversation_id: str, fmt: ExportFormat) -> tuple[bytes, str]:
        """The whole conversation as ``fmt`` (markdown, pdf or json) and a file name for it."""
        conversation = await self.get(principal, conversation_id)
        feedback = {
            turn.assistant.message_id: turn.assistant.feedback for turn in conversation.turns if turn.assistant.feedback
        }
        requests = await self._requests.for_conversation(principal, conversation_id)
        data = await self._exports.render(
            principal, conversation, feedback, fmt, requests=requests, policy=self._output_policy
        )
        return data, filename(conversation, fmt)


def _files_only(header: SessionHeader) -> ConversationSummary:
    """A session with files and no turn, as the list shows it: titled by its first files."""
    return ConversationSummary(
        conversation_id=header.conversation_id,
        title=", ".join(member.filename for member in (header.files or ())[:3]) or "Untitled",
        message_count=0,
        created_at=header.updated_at,
        updated_at=header.updated_at,
    )
