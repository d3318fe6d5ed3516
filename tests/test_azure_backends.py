"""ORC_STORAGE=azure end to end against the emulators (Azurite and cosmosdb-server), from settings alone."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from orc.clock import utc_now
from orc.composition import build_runtime
from orc.composition.foundation import parts_of
from orc.conversations import AssistantMessage, ConversationRepository, UserMessage
from orc.documents.intake.uploads import Upload
from orc.principal import Principal
from orc.settings import Settings
from orc.storage.azure_blob import AzureBlobStore
from orc.storage.cosmos import CosmosCollectionProvider
from orc.turns import TurnRequest
from tests.emulators import CosmosEmulator
from tests.http.conftest import open_client, upload
from tests.storage.conftest import emulator_cosmos_provider

pytestmark = pytest.mark.emulator


async def test_a_full_document_chat_turn_runs_on_cosmos_and_blob_storage(azure_settings: Settings) -> None:
    async with open_client(azure_settings) as client:
        health = (await client.get("/api/health")).json()
        assert health["storage"] == "azure"
        assert (await upload(client, "az-conv", ("lease.txt", b"The monthly rent is 1,450 euros."))).status_code == 201
        ask = {"question": "What is the monthly rent?", "conversation_id": "az-conv", "blob_names": ["lease.txt"]}

        first = (await client.post("/api/orc", json=ask)).json()
        second = (await client.post("/api/orc", json={**ask, "question": "And the rent, again?"})).json()

        assert "1,450" in first["answer"] and first["citations"][0]["document"] == "lease.txt"
        assert first["metadata"]["cache"] == "miss" and second["metadata"]["cache"] == "hit"
        history = (await client.get("/api/sessions/az-conv")).json()["messages"]
        assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
        assert (await client.delete("/api/sessions/az-conv")).status_code == 204
        assert (await client.get("/api/sessions/az-conv")).status_code == 404

    # Another instance (a new process) sees nothing of the deleted conversation but the same store.
    async with open_client(azure_settings) as client:
        assert (await client.get("/api/sessions")).json()["sessions"] == []


async def test_history_written_by_one_instance_seeds_a_turn_on_another(azure_settings: Settings) -> None:
    async with open_client(azure_settings) as client:
        await upload(client, "handoff", ("lease.txt", b"The monthly rent is 1,450 euros."))
        ask = {"question": "What is the monthly rent?", "conversation_id": "handoff", "blob_names": ["lease.txt"]}
        first = (await client.post("/api/orc", json=ask)).json()

    async with open_client(azure_settings) as client:
        follow_up = (await client.post("/api/orc", json={**ask, "question": "And again?"})).json()
        (call,) = follow_up["metadata"]["tool_calls"]

    assert call["arguments"]["cached_file_info"] == first["files"]
    # The new instance reads the stored text and honours the ids the first one issued.
    assert follow_up["metadata"]["cache"] == "hit"
    assert follow_up["files"] == first["files"]


@pytest.fixture
async def cosmos_conversations(cosmos_emulator: CosmosEmulator) -> AsyncIterator[ConversationRepository]:
    provider = emulator_cosmos_provider(cosmos_emulator)
    yield ConversationRepository(await provider.collection(f"c{uuid.uuid4().hex[:12]}"))
    await provider.aclose()


async def test_twenty_concurrent_writers_on_one_conversation_lose_and_duplicate_nothing(
    cosmos_conversations: ConversationRepository,
) -> None:
    principal = Principal(organization="contoso", user="alice")
    questions = [f"question {i}" for i in range(20)]

    async def write(question: str) -> None:
        now = utc_now()
        await cosmos_conversations.append_turn(
            principal,
            "busy",
            UserMessage(content=question, created_at=now),
            AssistantMessage(content=f"answer to {question}", created_at=now),
        )

    await asyncio.gather(*(write(q) for q in questions))

    turns = await cosmos_conversations.turns(principal, "busy")
    assert [turn.seq for turn in turns] == list(range(1, 21))
    assert sorted(turn.user.content for turn in turns) == sorted(questions)
    assert all(turn.assistant.content == f"answer to {turn.user.content}" for turn in turns)
    summary = await cosmos_conversations.get(principal, "busy")
    assert summary is not None and summary.message_count == 40


async def test_one_cosmos_client_and_one_blob_client_serve_every_turn(azure_settings: Settings) -> None:
    async with build_runtime(azure_settings) as runtime:
        orchestrator = runtime.orchestrator
        collections = parts_of(runtime.foundation).stores.collections
        blobs = parts_of(runtime.foundation).stores.blobs
        assert isinstance(collections, CosmosCollectionProvider)
        principal = Principal(organization="default", user="default")
        await runtime.foundation.session_files.add(
            principal, "one-client", [Upload("a.txt", b"Alpha is the first letter.")]
        )
        clients = set()
        for i in range(5):
            await orchestrator.ask(
                TurnRequest(question=f"What is alpha? ({i})", conversation_id="one-client", blob_names=["a.txt"])
            )
            assert isinstance(blobs, AzureBlobStore)
            clients.add((id(collections.client), id(blobs.client)))

    assert len(clients) == 1
