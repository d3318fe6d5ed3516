"""Conversations: their messages (:mod:`.models`), their storage (:mod:`.repository`), titles and exports."""

from orc.conversations.models import (
    AssistantMessage,
    Conversation,
    ConversationSummary,
    Feedback,
    FocusContext,
    Turn,
    UserMessage,
)
from orc.conversations.repository import HISTORY_TURNS, ConversationRepository, Snapshot

__all__ = [
    "HISTORY_TURNS",
    "AssistantMessage",
    "Conversation",
    "ConversationRepository",
    "ConversationSummary",
    "Feedback",
    "FocusContext",
    "Snapshot",
    "Turn",
    "UserMessage",
]
