"""The stream's wire format is pinned: each event type carries exactly these JSON keys, in this order, and the
typed events (``orc.turns``) declare exactly them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, get_args, get_type_hints

import httpx
import pytest
from langchain_core.messages import BaseMessage

from orc.errors import OrcError, ServiceUnavailable
from orc.http.streaming import encode
from orc.testing import FunctionChatModel
from orc.turns import Event, EventType, error_event
from tests.http.conftest import ClientFactory, upload

WIRE_KEYS: dict[str, list[str]] = {
    "progress": ["type", "step", "message", "percent"],
    "tool": ["type", "name", "status", "duration_ms"],
    "token": ["type", "text"],
    "citation": ["type", "ref", "document", "document_id", "span_id", "page", "quote", "section"],
    "context_required": [
        "type",
        "conversation_id",
        "user_message_id",
        "request_id",
        "required",
        "expires_at",
        "redactions",
    ],
    "context_update": ["type", "request_id", "status", "supplied", "missing"],
    "context_resolved": ["type", "request_id", "outcome"],
    "final": [
        "type",
        "conversation_id",
        "message_id",
        "created_at",
        "answer",
        "citations",
        "places_to_look",
        "files",
        "metadata",
        "usage",
        "suggestions",
    ],
    "error": ["type", "code", "message", "status"],
}
"""DESIGN §5's events as the HTTP layer emits them (``error`` adds ``retry_after`` when retrying may help; a
``context_update`` that reminds or ends adds ``at``, ``note`` and ``expires_at``)."""

LEASE = b"Residential lease.\n\nThe monthly rent is 1,450 euros, payable on the first business day of each month.\n"


async def ndjson(client: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with client.stream("POST", "/api/orc", json=body, headers={"Accept": "application/x-ndjson"}) as response:
        assert response.status_code == 200
        return [json.loads(line) async for line in response.aiter_lines() if line]


async def one(event: Event) -> AsyncIterator[Event]:
    yield event


def test_every_event_type_has_a_typed_event_declaring_exactly_its_wire_keys() -> None:
    declared = {get_args(hints["type"])[0]: list(hints) for hints in map(get_type_hints, get_args(Event))}

    assert set(declared) == set(get_args(EventType)) == set(WIRE_KEYS)
    for kind, keys in WIRE_KEYS.items():
        optional = {"error": ["retry_after"], "context_update": ["at", "note", "expires_at"]}.get(kind, [])
        assert declared[kind] == keys + optional, kind


async def test_a_streamed_turn_emits_progress_tool_token_citation_and_final_with_their_keys(
    client: httpx.AsyncClient,
) -> None:
    await upload(client, "shapes", ("lease.txt", LEASE))

    events = await ndjson(
        client, {"question": "What is the rent?", "conversation_id": "shapes", "blob_names": ["lease.txt"]}
    )

    assert {event["type"] for event in events} == {"progress", "tool", "token", "citation", "final"}
    for event in events:
        assert list(event) == WIRE_KEYS[event["type"]], event
    final = events[-1]
    assert list(final["usage"]) == ["input_tokens", "output_tokens", "total_tokens"]
    assert list(final["citations"][0]) == WIRE_KEYS["citation"][1:]
    assert list(final["files"][0]) == ["file_id", "blob_name"]


async def test_a_failed_turn_ends_its_stream_with_an_error_event(client_factory: ClientFactory) -> None:
    def broken(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> str:
        raise RuntimeError("the model is down")

    async with client_factory(model=FunctionChatModel(broken)) as client:
        events = await ndjson(client, {"question": "What is the rent?"})

    assert list(events[-1]) == WIRE_KEYS["error"]
    assert events[-1]["type"] == "error" and events[-1]["status"] == 500


@pytest.mark.parametrize(
    ("error", "keys"),
    [
        (OrcError("failed"), WIRE_KEYS["error"]),
        (ServiceUnavailable("busy", retry_after=3), [*WIRE_KEYS["error"], "retry_after"]),
    ],
)
async def test_error_events_encode_with_their_keys_as_ndjson_and_sse(error: OrcError, keys: list[str]) -> None:
    (line,) = [chunk async for chunk in encode(one(error_event(error)), "ndjson")]
    (block,) = [chunk async for chunk in encode(one(error_event(error)), "sse")]

    assert list(json.loads(line)) == keys
    name, data = block.decode().strip().split("\n")
    assert name == "event: error" and list(json.loads(data.removeprefix("data: "))) == keys
