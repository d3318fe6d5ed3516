"""The typed runtime context every node receives (``Runtime[TurnContext]``), built by the orchestrator."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from langchain_core.language_models import BaseChatModel

from orc.admission.port import Gate
from orc.conversations import ConversationRepository
from orc.documents.catalog.summaries import FileSummaries
from orc.mcp_client import McpToolbox
from orc.models.metering import ModelMeter
from orc.models.tokens import EstimatedTokens, TokenCounter
from orc.output_policy import OutputPolicy
from orc.principal import Principal

if TYPE_CHECKING:
    from orc.graph.state import TurnState


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What the nodes need for one turn; nodes never import storage or HTTP adapters."""

    principal: Principal
    conversation_id: str
    model: BaseChatModel
    conversations: ConversationRepository
    toolbox: McpToolbox
    max_tool_rounds: int
    """Bound on the tool loop (``Tuning.max_tool_rounds``)."""
    history_tokens: int
    """Budget of the recent history in the answer request (``ORC_HISTORY_TOKENS``)."""
    sources_tokens: int
    """Budget of the sources in the answer prompt (``ORC_SOURCES_TOKENS``)."""
    offers_planning_tools: bool = True
    """False when the MCP server has no tool but document_chat: then no planning call is worth making."""
    meter: ModelMeter = field(default_factory=ModelMeter)
    """Every model request a node makes is recorded here (``metadata.model_calls`` and ``usage``)."""
    finished: Callable[[TurnState], None] | None = None
    """Called by the answer node with the turn's final state: the orchestrator stores the turn while LangGraph
    writes its last checkpoint, instead of after it."""
    token_counter: TokenCounter = field(default_factory=EstimatedTokens)
    """Measures the answer prompt's budgets; chosen once for the model by the composition root (never does I/O)."""
    session_digest: Callable[[Principal, str], Awaitable[str]] | None = None
    """The session's ready aggregate digest as prompt text (empty when none), for the answer prompt's sheet."""
    file_summaries: FileSummaries | None = None
    """The stored digests of named files with the spans they cite, for a turn that asks what files are about."""
    context_requests: bool = False
    offers_request_context: bool = False
    """Whether the answer request offers a real model the ``request_context`` tool (caller allows requests)."""
    """Whether the caller can show a context request: then a turn that lacks context pauses and asks for it."""
    corrective_retry: bool = False
    """Whether an answer that is mostly uncited is asked for once more with citations (real models only: the
    offline model cites by construction)."""
    gate: Gate | None = None
    """The turn's fairness gate, from its admission: ``None`` never waits (an unlimited policy)."""
    stream_tokens: bool = True
    """Whether someone reads the turn's events: the answer is then requested as a stream, token by token; a caller
    that only wants the result (``Orchestrator.ask``, a JSON response) gets it in one response."""
    output_policy: OutputPolicy = field(default_factory=OutputPolicy)
    """What the answer, its quotes and its suggestions may hold when they are sent and stored
    (``ORC_OUTPUT_IMAGE_HOSTS``)."""
