"""A client that leaves a streamed answer ends the server's turn with it: the model's stream is closed when the
client's connection is, not when the model request's idle timeout (60 s) fires, and nothing is stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.models.openai_endpoint import OpenAIEndpoint, Reply, RunningEndpoint, serve
from tests.serving import orc_serve

CLOSED_WITHIN_SECONDS = 30.0
"""Half the model request's idle timeout: a close that only that timeout made would take 60 s."""


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RunningEndpoint]:
    yield from serve(OpenAIEndpoint())


@pytest.fixture(scope="module")
def server(endpoint: RunningEndpoint, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    env = {
        "ORC_MODEL": "openai:test-model",
        "ORC_MODEL_BASE_URL": endpoint.base_url,
        "ORC_MODEL_API_KEY": "local-test-key",
        "ORC_MODEL_MAX_RETRIES": "0",
    }
    home: Path = tmp_path_factory.mktemp("stopped") / "home"
    with orc_serve(home, env=env) as (base_url, _):
        yield base_url


@pytest.mark.parametrize("accept", ["application/x-ndjson", "text/event-stream"])
def test_a_client_leaving_a_streamed_answer_closes_the_model_stream_and_stores_nothing(
    endpoint: RunningEndpoint, server: str, accept: str
) -> None:
    endpoint.endpoint.reset(Reply(text="The monthly rent is", fault="stall"))
    body = {"question": "What is the monthly rent?", "conversation_id": "left"}
    with (
        httpx.Client(timeout=120) as client,
        client.stream("POST", f"{server}/api/orc", json=body, headers={"Accept": accept}) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if '"token"' in line:
                break  # the answer is streaming: the client leaves

    assert endpoint.endpoint.stream_closed.wait(CLOSED_WITHIN_SECONDS), "the server kept reading the model's stream"
    assert httpx.get(f"{server}/api/sessions/left", timeout=30).status_code == 404
