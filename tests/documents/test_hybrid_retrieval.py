"""Hybrid retrieval over the real OpenAI wire: ORC_EMBEDDINGS pointed at a loopback ``/v1/embeddings`` endpoint.

Span vectors are made when a document is processed (in batches), a turn embeds its retrieval query once and fuses
the vector ranking with the lexical one, and ``metadata.retrieval`` says which legs ran. A document processed
before embeddings were configured is searched lexically, never waited for. No test here reaches the internet.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from orc.composition import Services, Stores, build_runtime
from orc.composition.tuning import Tuning
from orc.documents.intake.uploads import Upload
from orc.principal import LOCAL_PRINCIPAL
from orc.settings import Settings
from orc.turns import TurnRequest, TurnResult
from tests.documents.library_support import memory_stores
from tests.documents.pdf_factory import make_pdf
from tests.jobs.support import until
from tests.models.openai_endpoint import OpenAIEndpoint, Reply, RunningEndpoint, serve

PAGES = [
    ["Headers are separated from the body by an empty line."],
    ["The sender field names the mailbox of the author."],
    ["A line must not exceed 78 characters, excluding the line ending."],
    ["Attachments are encoded in base64 when they contain binary data."],
]
RFC = make_pdf(PAGES)
PARAPHRASE = "How wide may it get?"
"""Shares no word with the answering page: only a model that knows "wide" ~ "characters" finds it."""


@pytest.fixture(scope="module")
def running() -> Iterator[RunningEndpoint]:
    yield from serve(OpenAIEndpoint())


@pytest.fixture
def endpoint(running: RunningEndpoint) -> OpenAIEndpoint:
    running.endpoint.reset()
    running.endpoint.meanings = {"wide": "exceed 78 characters"}
    return running.endpoint


def embeddings_on(running: RunningEndpoint, **extra: Any) -> Settings:
    return Settings(embeddings="openai:local-embed", embeddings_base_url=running.base_url, **extra)


@asynccontextmanager
async def runtime(settings: Settings, stores: Stores | None = None) -> AsyncIterator[Services]:
    # Three spans per embeddings request: a document of a few spans still takes several.
    tuning = Tuning(embeddings_batch_size=3)
    async with build_runtime(settings, stores=stores or memory_stores(), tuning=tuning) as services:
        yield services


async def attach(services: Services) -> None:
    await services.foundation.session_files.add(LOCAL_PRINCIPAL, "conv", [Upload("rfc.pdf", RFC)], wait_seconds=10)


async def ask(services: Services, question: str) -> TurnResult:
    result = await services.orchestrator.ask(
        TurnRequest(question=question, conversation_id="conv", blob_names=["rfc.pdf"])
    )
    assert isinstance(result, TurnResult)
    return result


async def search(services: Services, query: str) -> Any:
    scope = await services.foundation.scopes.resolve(LOCAL_PRINCIPAL, session_id="conv")
    return await services.documents.library.search(LOCAL_PRINCIPAL, scope, query)


async def test_processing_embeds_the_spans_in_batches(running: RunningEndpoint, endpoint: OpenAIEndpoint) -> None:
    async with runtime(embeddings_on(running)) as services:
        await attach(services)

    assert [len(request["input"]) for request in endpoint.embedding_requests] == [3, 1]
    assert len(endpoint.embedding_requests) == math.ceil(len(PAGES) / 3)


async def test_a_turn_embeds_its_retrieval_query_once_and_says_both_legs_ran(
    running: RunningEndpoint, endpoint: OpenAIEndpoint
) -> None:
    async with runtime(embeddings_on(running)) as services:
        await attach(services)
        before = len(endpoint.embedding_requests)

        result = await ask(services, "What separates the headers from the body?")

    (query,) = endpoint.embedding_requests[before:]
    (call,) = result.metadata.tool_calls
    assert query["input"] == [call.arguments["question"]]
    retrieval = result.metadata.retrieval
    assert retrieval is not None
    assert (retrieval.legs, retrieval.fusion, retrieval.embeddings) == (
        ["lexical", "vector"],
        "rrf",
        "openai:local-embed",
    )
    # The turn's one answer call (the offline model's here), as without embeddings: never an extra one.
    assert result.metadata.model_calls == 1
    assert endpoint.requests == []


async def test_the_vector_leg_finds_a_paraphrase_that_shares_no_word_with_the_answer(
    running: RunningEndpoint, endpoint: OpenAIEndpoint
) -> None:
    async with runtime(Settings()) as lexical_only:
        await attach(lexical_only)
        without = await search(lexical_only, PARAPHRASE)
    async with runtime(embeddings_on(running)) as hybrid:
        await attach(hybrid)
        found = await search(hybrid, PARAPHRASE)

    assert without.results == [] and without.retrieval.legs == ["lexical"]
    assert found.results[0].ref == "rfc.pdf::S3"
    assert found.retrieval.legs == ["lexical", "vector"]


async def test_a_turn_whose_query_cannot_be_embedded_is_answered_from_the_lexical_leg(
    running: RunningEndpoint, endpoint: OpenAIEndpoint
) -> None:
    async with runtime(embeddings_on(running, model_max_retries=0)) as services:
        await attach(services)
        endpoint.embedding_faults = [Reply(status=500)]

        result = await ask(services, "What separates the headers from the body?")

    retrieval = result.metadata.retrieval
    assert retrieval is not None
    assert retrieval.legs == ["lexical"] and retrieval.vector_error == "embedding_unavailable"
    assert result.citations and result.citations[0].ref == "rfc.pdf::S1"


async def test_a_document_processed_before_embeddings_is_searched_lexically_and_embedded_in_the_background(
    running: RunningEndpoint, endpoint: OpenAIEndpoint
) -> None:
    stores = memory_stores()
    async with runtime(Settings(), stores) as before_embeddings:
        await attach(before_embeddings)
    # The span request never finishes while the test runs: the turn must not wait for it.
    endpoint.embedding_fault_for = lambda body: Reply(fault="hang") if len(body["input"]) > 1 else None

    async with runtime(embeddings_on(running), stores) as services:
        result = await ask(services, "What separates the headers from the body?")

        async def spans_requested() -> bool:
            return any(len(request["input"]) > 1 for request in endpoint.embedding_requests)

        # The turn starts the spans' embedding and does not await it: its request arrives when the loop gets to it.
        await until(spans_requested)

    retrieval = result.metadata.retrieval
    assert retrieval is not None
    assert retrieval.legs == ["lexical"] and retrieval.lexical_only == ["rfc.pdf"]
    assert sorted(len(request["input"]) for request in endpoint.embedding_requests) == [1, 3]
    assert result.citations and result.citations[0].ref == "rfc.pdf::S1"


async def test_with_a_real_chat_model_a_turn_makes_one_chat_request_and_one_embedding_request(
    running: RunningEndpoint, endpoint: OpenAIEndpoint
) -> None:
    settings = embeddings_on(
        running,
        model="openai:chat-model",
        model_base_url=running.base_url,
        model_max_retries=0,
        # Digests and titles are background chat requests of their own: off, so the turn's are counted alone.
        digest_model="offline",
        generated_titles=False,
    )
    async with runtime(settings) as services:
        await attach(services)
        spans_requests = len(endpoint.embedding_requests)
        endpoint.reset(Reply(text="An empty line separates them [rfc.pdf::S1]."))

        result = await ask(services, "What separates the headers from the body?")

    assert len(endpoint.requests) == result.metadata.model_calls == 1
    assert spans_requests == 2 and len(endpoint.embedding_requests) == 1
    assert result.metadata.retrieval is not None and result.metadata.retrieval.legs == ["lexical", "vector"]
    assert [citation.ref for citation in result.citations] == ["rfc.pdf::S1"]


async def test_a_query_vector_slower_than_the_embeddings_timeout_leaves_the_turn_to_the_lexical_leg(
    running: RunningEndpoint, endpoint: OpenAIEndpoint
) -> None:
    settings = embeddings_on(running, model_timeout_seconds=0.2, model_max_retries=0)
    async with runtime(settings) as services:
        await attach(services)
        endpoint.embedding_faults = [Reply(fault="hang")]
        try:
            # Well below the default 60 s, and far above 0.2 s for a machine whose cores are busy: the setting,
            # not the default, ended the wait.
            async with asyncio.timeout(40):
                result = await ask(services, "What separates the headers from the body?")
        finally:
            endpoint.released.set()

    retrieval = result.metadata.retrieval
    assert retrieval is not None
    assert retrieval.legs == ["lexical"] and retrieval.vector_error == "embedding_timeout"
    assert result.citations and result.citations[0].ref == "rfc.pdf::S1"
