"""The side-by-side benchmark's peer build works: one turn over its FastMCP server answers from the documents.

Not a timed test: it checks that ``python -m bench --only peer`` compares orc with a peer that really searches
the documents, not with one that fails fast.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.common import SAMPLE_DOCS, SAMPLE_NAMES, asgi_client, serve_on_loopback
from bench.peer_app import PEER_VARIANTS, PeerVariant, create_peer_app
from bench.peer_mcp import create_mcp
from bench.peer_model import bench_model

RENT = "The monthly rent is 1,450 euros, payable on the first business day of each month."


@pytest.fixture
async def mcp_url(tmp_path: Path) -> AsyncIterator[str]:
    """The peer's FastMCP document server over the benchmark's sample documents, on a loopback port."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, data in SAMPLE_DOCS.items():
        (docs / name).write_bytes(data)
    async with serve_on_loopback(create_mcp(docs).streamable_http_app()) as base_url:
        yield base_url + "/mcp"


@pytest.mark.parametrize("variant", PEER_VARIANTS)
async def test_the_peer_answers_a_first_turn_with_the_documents_text(
    mcp_url: str, tmp_path: Path, variant: PeerVariant
) -> None:
    model = bench_model(latency=0.0)
    app = create_peer_app(model, mcp_url, variant, tmp_path / "checkpoints.sqlite")
    body = {"question": "What is the monthly rent?", "conversation_id": "c1", "blob_names": SAMPLE_NAMES}

    async with asgi_client(app) as client:
        response = await client.post("/chat", json=body)

    assert response.status_code == 200, response.text
    assert response.json()["answer"] == f"{RENT} [lease.txt::S1]"
    assert response.json()["metadata"]["model_calls"] == 2
    assert model.requests[0].tool_names == ["document_chat"]


async def test_the_peer_streams_the_answer_as_token_events_then_a_final_one(mcp_url: str, tmp_path: Path) -> None:
    app = create_peer_app(bench_model(), mcp_url, "session", tmp_path / "checkpoints.sqlite")
    body = {"question": "Is water damage covered?", "conversation_id": "c1", "blob_names": ["warranty.txt"]}

    async with asgi_client(app) as client:
        response = await client.post("/chat", json=body, headers={"Accept": "application/x-ndjson"})

    events = [json.loads(line) for line in response.text.splitlines()]
    tokens = "".join(event["text"] for event in events if event["type"] == "token")
    assert tokens == "Water damage is not covered by this warranty. [warranty.txt::S1]"
    assert events[-1] == {"type": "final", "answer": tokens, "metadata": {"model_calls": 2}}
