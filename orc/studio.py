"""The turn graph for ``langgraph dev`` / LangGraph Studio (``langgraph.json`` points at :func:`make_graph`).

Nothing is built at import: the LangGraph server imports this module, then enters :func:`make_graph` for each run
with the run's config. The graph's nodes read their :class:`~orc.graph.context.TurnContext` (model, MCP toolbox,
stores) from the LangGraph runtime, which Studio cannot send as JSON; so the factory opens orc's services from the
``ORC_`` environment (by default the embedded stores under ``ORC_HOME`` and the offline model) and binds a context
for the local principal, the run's thread acting as the conversation. Studio then steps through the real nodes:
query_planner → tool_router → mcp_executor → context_builder → answer.

The run's input is ``{"question": "..."}``, plus ``blob_names`` to force document_chat over named attached files.
The documents are those attached to the session whose id is the Studio thread's id (``orc ask --conversation ID
--file ...`` or the HTTP API attach them); ``focus_context`` stays unset (it is a model object in the state, which
JSON input cannot carry). Turns run here are not stored as conversations (that is the orchestrator's job).

``langgraph dev`` runs the factory and the graph on its own event loop and refuses blocking calls there
(blockbuster): opening the stores keeps file-system work off the loop. ``tests/test_studio.py`` starts
``langgraph dev`` and runs a turn through its API.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from orc.composition import build_document_services, build_foundation, in_memory_mcp
from orc.composition.tuning import TUNED
from orc.graph import TurnContext, build_graph
from orc.graph.state import TurnState
from orc.mcp_client import McpToolbox
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.tool_contract import DOCUMENT_CHAT


class StudioGraph(CompiledStateGraph[TurnState, TurnContext, TurnState, TurnState]):
    """The turn graph with one run's context bound to it.

    The server hands every run its assistant's context (``{}`` by default), which cannot carry orc's services; a run
    given none gets the bound one, through ``astream``'s public ``context`` argument (``astream_events`` and the
    invoke methods go through ``astream``). ``copy`` (the server's, for its checkpointer) keeps the binding."""

    def __init__(self, *, bound_context: TurnContext, **attributes: Any) -> None:
        super().__init__(**attributes)
        self.bound_context = bound_context

    def astream(self, input: Any, config: RunnableConfig | None = None, *, context: Any = None, **kwargs: Any) -> Any:
        """The graph's own ``astream`` with this run's context when the caller sends none."""
        return super().astream(input, config, context=context or self.bound_context, **kwargs)


@asynccontextmanager
async def make_graph(config: RunnableConfig | None = None) -> AsyncIterator[StudioGraph]:
    """The compiled turn graph, bound to a live offline/embedded context for this run (see the module docs)."""
    settings = Settings()
    configurable: dict[str, Any] = dict((config or {}).get("configurable") or {})
    conversation_id = str(configurable.get("thread_id") or uuid.uuid4())
    async with AsyncExitStack() as stack:
        foundation = await build_foundation(settings, stack)
        services = await build_document_services(settings, stack, foundation)
        connection = in_memory_mcp(services.server)
        stack.push_async_callback(connection.aclose)
        tools = await services.server.list_tools()
        context = TurnContext(
            principal=LOCAL_PRINCIPAL,
            conversation_id=conversation_id,
            model=services.model,
            conversations=foundation.conversations,
            toolbox=McpToolbox(
                connection,
                principal=LOCAL_PRINCIPAL,
                # The orchestrator's scope for a turn without focus: the thread's session documents.
                scope={"session_id": conversation_id, "include_historical": True},
            ),
            max_tool_rounds=TUNED.max_tool_rounds,
            history_tokens=settings.history_tokens,
            sources_tokens=settings.sources_tokens,
            offers_planning_tools=any(tool.name != DOCUMENT_CHAT for tool in tools),
            stream_tokens=True,
        )
        # Declared without a context schema: LangGraph would otherwise build TurnContext from the server's `{}`
        # (its services cannot come as JSON) instead of leaving the run's context empty for the bound one.
        attributes = {name: value for name, value in vars(build_graph()).items() if name != "__orig_class__"}
        yield StudioGraph(bound_context=context, **{**attributes, "context_schema": None})
