"""The peer: the build a LangGraph user would write for orc's job, as the libraries' own docs show it.

- the agent is ``langchain.agents.create_agent``: LangGraph 1.x deprecates ``langgraph.prebuilt.create_react_agent``
  ("create_react_agent has been moved to `langchain.agents`"), and ``create_agent`` is the same model ⇄ tools loop;
- its tools come from ``langchain-mcp-adapters`` over the FastMCP server of :mod:`bench.peer_mcp` (streamable
  HTTP), in one of two variants: ``per-call``, ``MultiServerMCPClient.get_tools()`` as its docs show first (a new
  MCP session for each tool call), and ``session``, one session opened at start-up and shared by every turn
  (``client.session(...)`` + ``load_mcp_tools(session)``);
- conversations are kept by an ``AsyncSqliteSaver`` checkpointer (``thread_id`` = the conversation id);
- FastAPI serves ``POST /chat`` (``{question, conversation_id, blob_names}``): a JSON answer, or with
  ``Accept: application/x-ndjson`` a stream of ``{"type": "token"}`` lines from ``astream(stream_mode="messages")``
  and a last ``{"type": "final"}`` line, the shape of orc's stream. The attached file names go into the user
  message, so the model can pass them to ``document_chat``.

:func:`create_floor_app` is the floor: a FastAPI endpoint that returns a fixed JSON answer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Literal, cast

from fastapi import FastAPI, Request
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.state import CompiledStateGraph
from pydantic import BaseModel
from starlette.responses import StreamingResponse

from bench.peer_model import user_message

PeerVariant = Literal["per-call", "session"]
PEER_VARIANTS: tuple[PeerVariant, ...] = ("per-call", "session")
SERVER_NAME = "documents"
SYSTEM_PROMPT = (
    "You answer questions about the user's attached documents. Call document_chat with the user's question and "
    "the attached file names, then answer only from the passages it returns. Cite every fact with the ref of its "
    "passage in square brackets, e.g. [lease.txt::S1]. If the passages do not answer the question, say so."
)
FLOOR_ANSWER: dict[str, Any] = {"answer": "A fixed answer.", "citations": [], "metadata": {"model_calls": 0}}


class ChatRequest(BaseModel):
    """One turn, the fields of orc's ``POST /api/orc`` body."""

    question: str
    conversation_id: str
    blob_names: list[str] = []


@asynccontextmanager
async def peer_agent(
    model: BaseChatModel, mcp_url: str, variant: PeerVariant, checkpoints: Path
) -> AsyncIterator[CompiledStateGraph[Any, Any, Any, Any]]:
    """The agent with its MCP tools and SQLite checkpointer, open for the duration of the ``async with``."""
    async with AsyncExitStack() as stack:
        saver = await stack.enter_async_context(AsyncSqliteSaver.from_conn_string(str(checkpoints)))
        client = MultiServerMCPClient({SERVER_NAME: {"url": mcp_url, "transport": "streamable_http"}})
        if variant == "session":
            session = await stack.enter_async_context(client.session(SERVER_NAME))
            tools = await load_mcp_tools(session)
        else:
            tools = await client.get_tools()  # "A new session will be created for each tool call"
        yield create_agent(model, tools, system_prompt=SYSTEM_PROMPT, checkpointer=saver)


def _turn(body: ChatRequest) -> tuple[dict[str, Any], RunnableConfig]:
    inputs = {"messages": [HumanMessage(user_message(body.question, body.blob_names))]}
    return inputs, {"configurable": {"thread_id": body.conversation_id}}


def _new_model_calls(messages: list[Any]) -> int:
    """AI messages after the turn's human message: one per model call."""
    calls = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        calls += isinstance(message, AIMessage)
    return calls


def create_peer_app(model: BaseChatModel, mcp_url: str, variant: PeerVariant, checkpoints: Path) -> FastAPI:
    """The peer's FastAPI app; the agent is built in its lifespan."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with peer_agent(model, mcp_url, variant, checkpoints) as agent:
            app.state.agent = agent
            yield

    app = FastAPI(lifespan=lifespan)

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/chat", response_model=None)
    async def chat(body: ChatRequest, request: Request) -> dict[str, Any] | StreamingResponse:
        agent = request.app.state.agent
        inputs, config = _turn(body)
        if "application/x-ndjson" in request.headers.get("accept", ""):
            return StreamingResponse(_stream(agent, inputs, config), media_type="application/x-ndjson")
        state = await agent.ainvoke(inputs, config)
        messages = state["messages"]
        return {
            "conversation_id": body.conversation_id,
            "answer": messages[-1].text,
            "metadata": {"model_calls": _new_model_calls(messages)},
        }

    return app


async def _stream(
    agent: CompiledStateGraph[Any, Any, Any, Any], inputs: dict[str, Any], config: RunnableConfig
) -> AsyncIterator[bytes]:
    """NDJSON events: a ``token`` per text chunk of the model, then ``final`` with the answer."""
    answer = ""
    calls = 0
    # With a list of modes, LangGraph streams (mode, data) pairs.
    parts = cast(AsyncIterator[tuple[str, Any]], agent.astream(inputs, config, stream_mode=["messages", "updates"]))
    async for mode, data in parts:
        if mode == "messages":
            chunk, _ = data
            if isinstance(chunk, AIMessageChunk) and chunk.text:
                yield (json.dumps({"type": "token", "text": chunk.text}) + "\n").encode()
        elif mode == "updates" and "model" in data:
            for message in data["model"]["messages"]:
                calls += 1
                answer = message.text
    final = {"type": "final", "answer": answer, "metadata": {"model_calls": calls}}
    yield (json.dumps(final) + "\n").encode()


def create_floor_app() -> FastAPI:
    """The floor: FastAPI returning a fixed JSON answer to the same request."""
    app = FastAPI()

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/chat")
    async def chat(body: ChatRequest) -> dict[str, Any]:
        return FLOOR_ANSWER

    return app
