"""The embeddings port (ORC_EMBEDDINGS): specs, the real OpenAI wire against a loopback endpoint, and the guard."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from orc.errors import ConfigurationError, ModelRequestsForbidden
from orc.models.embeddings import EmbeddingModel, OpenAIEmbeddingModel, build_embedding_model, model_key
from orc.models.guard import forbid_model_requests
from orc.settings import Settings
from orc.testing.embeddings import hashed_vector
from tests.models.closing import clients_closed_after_each_test, resources  # noqa: F401 (autouse fixture)
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, RunningEndpoint, serve


@pytest.fixture(scope="module")
def running() -> Iterator[RunningEndpoint]:
    yield from serve(OpenAIEndpoint())


@pytest.fixture
def endpoint(running: RunningEndpoint) -> RunningEndpoint:
    running.endpoint.reset()
    return running


def local_model(running: RunningEndpoint, **options: Any) -> OpenAIEmbeddingModel:
    model = build_embedding_model(
        "openai:local-embed",
        base_url=running.base_url,
        environ={},
        resources=resources(),
        **{"timeout": 5.0, "max_retries": 0, "batch_size": 256, **options},
    )
    assert isinstance(model, OpenAIEmbeddingModel)
    return model


def test_off_is_the_default_and_builds_no_model() -> None:
    assert Settings().embeddings == "off"
    assert build_embedding_model("off", environ={}, timeout=5.0, max_retries=0, batch_size=256) is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("openai:text-embedding-3-small", "ORC_EMBEDDINGS_API_KEY or OPENAI_API_KEY"),
        ("azure:embed", "AZURE_OPENAI_ENDPOINT (or ORC_EMBEDDINGS_BASE_URL)"),
        ("offline", "use off, openai:<model> or azure:<deployment>"),
        ("openai:", "use off, openai:<model> or azure:<deployment>"),
    ],
)
def test_a_spec_that_cannot_be_served_is_refused_naming_the_setting(spec: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_embedding_model(spec, environ={}, timeout=5.0, max_retries=0, batch_size=256)


def test_azure_and_openai_specs_build_models_keyed_by_what_they_serve() -> None:
    azure = build_embedding_model(
        "azure:embed-small",
        environ={"AZURE_OPENAI_ENDPOINT": "https://x.openai.azure.com/", "AZURE_OPENAI_API_KEY": "k"},
        timeout=5.0,
        max_retries=0,
        batch_size=256,
    )
    openai = build_embedding_model(
        "openai:text-embedding-3-small", environ={"OPENAI_API_KEY": "k"}, timeout=5.0, max_retries=0, batch_size=256
    )
    assert azure is not None and openai is not None
    assert isinstance(azure, EmbeddingModel)
    assert azure.identity == "azure:embed-small@https://x.openai.azure.com/"
    assert openai.identity == "openai:text-embedding-3-small@api.openai.com"
    assert model_key(azure) != model_key(openai)


async def test_texts_are_embedded_over_the_openai_wire_one_request_per_call(endpoint: RunningEndpoint) -> None:
    model = local_model(endpoint, batch_size=3)

    vectors = await model.embed(["the deposit is 900 euros", "the boat is at pier 7", "rent"], "spans")

    assert vectors[0] == pytest.approx(hashed_vector("the deposit is 900 euros"), abs=1e-6)
    assert len(vectors) == 3 and model.requests == 1
    (request,) = endpoint.endpoint.embedding_requests
    assert request["model"] == "local-embed"
    # Raw text, not tiktoken ids (no tokenizer download); vectors as base64 float32, the SDK's cheap path.
    assert request["input"] == ["the deposit is 900 euros", "the boat is at pier 7", "rent"]
    assert request["encoding_format"] == "base64"


async def test_a_server_that_answers_floats_to_a_base64_request_is_read_too(endpoint: RunningEndpoint) -> None:
    endpoint.endpoint.answers_floats = True  # as Ollama does
    model = local_model(endpoint)

    (vector,) = await model.embed(["the deposit is 900 euros"], "query")

    assert vector == pytest.approx(hashed_vector("the deposit is 900 euros"), abs=1e-6)


async def test_more_texts_than_a_batch_are_refused_so_callers_count_their_requests(endpoint: RunningEndpoint) -> None:
    model = local_model(endpoint, batch_size=2)
    with pytest.raises(ValueError, match="at most 2"):
        await model.embed(["a", "b", "c"], "spans")
    assert endpoint.endpoint.embedding_requests == []


async def test_a_server_error_is_retried_within_the_bounded_retries(endpoint: RunningEndpoint) -> None:
    endpoint.endpoint.embedding_faults = [Reply(status=500, headers={"retry-after-ms": "1"})]
    model = local_model(endpoint, max_retries=1)

    (vector,) = await model.embed(["lease"], "query")

    assert vector == pytest.approx(hashed_vector("lease"), abs=1e-6)
    assert len(endpoint.endpoint.embedding_requests) == 2
    assert model.requests == 1


async def test_errors_beyond_the_retries_are_raised(endpoint: RunningEndpoint) -> None:
    endpoint.endpoint.embedding_faults = [Reply(status=503, headers={"retry-after-ms": "1"})] * 2
    model = local_model(endpoint, max_retries=1)

    with pytest.raises(Exception) as raised:
        await model.embed(["lease"], "query")

    assert "503" in str(raised.value) or type(raised.value).__name__ == "InternalServerError"
    assert len(endpoint.endpoint.embedding_requests) == 2


@pytest.fixture
def no_dns(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    lookups: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        lookups.append(args)
        raise OSError("network access in a test")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return lookups


async def test_a_forbidden_embedding_request_fails_before_any_network_io(no_dns: list[Any]) -> None:
    model = build_embedding_model(
        "openai:embed",
        base_url="http://example.invalid/v1",
        api_key="k",
        environ={},
        timeout=5.0,
        max_retries=0,
        batch_size=256,
    )
    assert model is not None

    with forbid_model_requests(), pytest.raises(ModelRequestsForbidden):
        await model.embed(["hi"], "query")

    assert no_dns == []


async def test_entra_id_token_acquisition_for_embeddings_is_guarded(no_dns: list[Any]) -> None:
    environ = {"AZURE_OPENAI_ENDPOINT": "https://example.openai.azure.com/"}
    model = build_embedding_model("azure:embed", max_retries=0, environ=environ, timeout=5.0, batch_size=256)
    assert model is not None

    with forbid_model_requests(), pytest.raises(ModelRequestsForbidden):
        await model.embed(["hi"], "query")

    assert no_dns == []
