"""A small OpenAI-compatible ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` endpoint on loopback, for
wire tests.

Embeddings are deterministic (:func:`orc.testing.embeddings.hashed_vector`: hashed bag of words), as floats or
base64 float32 as the request's ``encoding_format`` asks. ``meanings`` stands in for what a real model knows:
a word in it is embedded as its meaning ("wide" → "length characters"), so a paraphrase can be nearest a span
that shares none of its words. ``embedding_faults`` are error replies given first; ``embedding_fault_for``
picks a fault by request body (e.g. hang only the requests that embed spans).

It answers from a queue of :class:`Reply` objects: text (JSON, or SSE chunks when ``stream`` is true), tool
calls, an HTTP error with headers (e.g. 429 with ``retry-after-ms``, or 400 with an OpenAI error ``code`` such as
``context_length_exceeded``), a hang (no answer until the endpoint is closed), a cut (the connection drops in
the middle of the body) or a stall (the text streams, then nothing until the client goes away: ``stream_closed``
is set then). A ``responder`` may answer a request by its content before the queue is used. uvicorn serves it
from a background thread on a free port; startup is awaited by polling ``server.started`` against a deadline.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from orc.testing.embeddings import hashed_vector

STARTUP_DEADLINE_SECONDS = 120.0
"""Bounds an endpoint that never starts (the loop ends as soon as it has): a busy machine only makes it slower."""
_WORDS = re.compile(r"[^\W_]+")


@dataclass
class Reply:
    """One scripted answer of the endpoint."""

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    code: str | None = None
    """The OpenAI error ``code`` of an error reply (default: the status)."""
    fault: Literal["hang", "cut", "truncated", "stall"] | None = None
    """``hang``: never answer (until the endpoint stops); ``cut``: drop the connection mid-body; ``truncated``: a
    complete response whose JSON body stops halfway; ``stall`` (streamed requests): the text, then nothing more
    until the client closes the stream."""
    pieces: list[str] | None = None
    """The deltas a streamed ``text`` is sent in (default: word by word, each with its trailing space)."""


class OpenAIEndpoint:
    """The endpoint's state: replies still to give and request bodies received."""

    def __init__(self) -> None:
        # Hung requests wait for this (set when the endpoint stops), so a test's teardown never waits on them.
        self.released = threading.Event()
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.embedding_faults: list[Reply] = []
        self.embedding_fault_for: Callable[[dict[str, Any]], Reply | None] | None = None
        self.meanings: dict[str, str] = {}
        self.embedding_delay = 0.0
        """Seconds each embedding request takes on the server (a model's compute time, for benchmarks)."""
        self.answers_floats = False
        """Answer JSON floats even when base64 is asked for (as Ollama does)."""
        self.responder: Callable[[dict[str, Any]], Reply | None] | None = None
        """Answers a chat request by its body before the queue is used (``None``: the queue answers)."""
        self.stream_closed = threading.Event()
        """Set when a client closed a stalled stream (the caller stopped waiting for the rest)."""
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self._chat_completions)
        self.app.post("/v1/embeddings")(self._embeddings)

    def reset(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests = []
        self.embedding_requests = []
        self.embedding_faults = []
        self.embedding_fault_for = None
        self.meanings = {}
        self.answers_floats = False
        self.responder = None
        self.stream_closed.clear()

    async def _embeddings(self, request: Request) -> Response:
        body = await request.json()
        self.embedding_requests.append(body)
        if self.embedding_delay:
            await asyncio.sleep(self.embedding_delay)
        chosen = self.embedding_fault_for(body) if self.embedding_fault_for is not None else None
        if chosen is not None or self.embedding_faults:
            reply = chosen if chosen is not None else self.embedding_faults.pop(0)
            if reply.fault == "hang":
                await asyncio.to_thread(self.released.wait)
                return Response(status_code=503)
            error = {"error": {"message": reply.text or "error", "type": "scripted", "code": reply.code}}
            return JSONResponse(error, status_code=reply.status, headers=reply.headers)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = []
        for index, text in enumerate(texts):
            vector = hashed_vector(
                " ".join(self.meanings.get(word, word) for word in _WORDS.findall(str(text).lower()))
            )
            if body.get("encoding_format") == "base64" and not self.answers_floats:  # the OpenAI SDK's default
                embedding: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            else:
                embedding = vector
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = sum(len(str(text).split()) for text in texts)
        return JSONResponse(
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _chat_completions(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        chosen = self.responder(body) if self.responder is not None else None
        if chosen is not None:
            reply = chosen
        else:
            reply = self.replies.pop(0) if self.replies else Reply(status=500, text="script exhausted")
        if reply.fault == "hang":
            await asyncio.to_thread(self.released.wait)
            return Response(status_code=503)
        if reply.fault == "stall":
            return StreamingResponse(self._stalled(body["model"], reply), media_type="text/event-stream")
        if reply.fault == "cut":
            return StreamingResponse(
                _cut(), media_type="text/event-stream" if body.get("stream") else "application/json"
            )
        if reply.fault == "truncated":
            return Response(
                b'{"id": "chatcmpl-local", "object": "chat.completion", "choi', media_type="application/json"
            )
        if reply.status != 200:
            code = reply.code or str(reply.status)
            error = {"error": {"message": reply.text or "error", "type": "scripted", "code": code}}
            return JSONResponse(error, status_code=reply.status, headers=reply.headers)
        usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return StreamingResponse(
                _sse(body["model"], reply, usage if include_usage else None), media_type="text/event-stream"
            )
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = [_tool_call(call) for call in reply.tool_calls]
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if reply.tool_calls else "stop"}
        return JSONResponse(
            {
                "id": "chatcmpl-local",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [choice],
                "usage": usage,
            }
        )

    async def _stalled(self, model: str, reply: Reply) -> AsyncIterator[str]:
        """The reply's text as SSE chunks, then nothing until the client goes away (or the endpoint stops)."""
        try:
            for chunk in _sse(model, Reply(text=reply.text), None):
                if chunk.startswith("data: [DONE]") or '"finish_reason": "stop"' in chunk:
                    break
                yield chunk
            # Cancelled when the client disconnects (the waiting thread ends when the endpoint stops).
            await asyncio.to_thread(self.released.wait)
        finally:
            self.stream_closed.set()


async def _cut() -> AsyncIterator[bytes]:
    """Half a body, then a dropped connection (uvicorn aborts a response whose body raises)."""
    yield b'data: {"id": "chatcmpl-local", "object": "chat.completion.chunk", "choi'
    raise ConnectionResetError("the endpoint cut the response")


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    arguments = json.dumps(call["args"])
    return {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": arguments}}


def _sse(model: str, reply: Reply, usage: dict[str, int] | None) -> Iterator[str]:
    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        chunk = {"id": "chatcmpl-local", "object": "chat.completion.chunk", "created": 0, "model": model}
        return f"data: {json.dumps({**chunk, 'choices': choices, **extra})}\n\n"

    yield event([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
    deltas = reply.pieces if reply.pieces is not None else [word + " " for word in reply.text.split(" ") if reply.text]
    for delta in deltas:
        yield event([{"index": 0, "delta": {"content": delta}, "finish_reason": None}])
    for index, call in enumerate(reply.tool_calls):
        delta = {"tool_calls": [{"index": index, **_tool_call(call)}]}
        yield event([{"index": 0, "delta": delta, "finish_reason": None}])
    finish = "tool_calls" if reply.tool_calls else "stop"
    yield event([{"index": 0, "delta": {}, "finish_reason": finish}])
    if usage is not None:
        yield event([], usage=usage)
    yield "data: [DONE]\n\n"


@dataclass
class RunningEndpoint:
    endpoint: OpenAIEndpoint
    base_url: str


def serve(endpoint: OpenAIEndpoint) -> Iterator[RunningEndpoint]:
    """Run ``endpoint`` on a free loopback port until the generator is closed (a pytest fixture body)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(endpoint.app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_DEADLINE_SECONDS
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the local OpenAI endpoint did not start")
        time.sleep(0.01)
    try:
        yield RunningEndpoint(endpoint, f"http://127.0.0.1:{port}/v1")
    finally:
        endpoint.released.set()
        server.should_exit = True
        thread.join(timeout=STARTUP_DEADLINE_SECONDS)
        sock.close()
